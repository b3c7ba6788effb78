"""Tests of nnconsole.engine.project."""
