"""Tests of nnconsole.engine.metrics."""
