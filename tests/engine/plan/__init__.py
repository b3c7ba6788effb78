"""Tests of nnconsole.engine.plan."""
