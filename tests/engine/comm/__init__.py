"""Tests of nnconsole.engine.comm."""
