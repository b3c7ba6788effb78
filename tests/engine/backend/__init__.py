"""Tests of nnconsole.engine.backend."""
