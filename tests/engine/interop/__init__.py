"""Tests of nnconsole.engine.interop."""
