"""Tests of nnconsole.engine.runtime."""
