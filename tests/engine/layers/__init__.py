"""Tests of nnconsole.engine.layers."""
