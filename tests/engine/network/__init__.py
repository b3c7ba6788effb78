"""Tests of nnconsole.engine.network."""
