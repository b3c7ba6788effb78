"""Tests of nnconsole.engine.data."""
