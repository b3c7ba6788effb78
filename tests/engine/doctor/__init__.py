"""Tests of nnconsole.engine.doctor."""
