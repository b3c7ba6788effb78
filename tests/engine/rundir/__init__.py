"""Tests of nnconsole.engine.rundir."""
