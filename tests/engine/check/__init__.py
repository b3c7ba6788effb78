"""Tests of nnconsole.engine.check."""
