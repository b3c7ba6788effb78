"""Tests of nnconsole.engine.train."""
