"""Tests of nnconsole.engine.launch."""
