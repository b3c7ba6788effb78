"""Tests of nnconsole.engine.evaluate."""
