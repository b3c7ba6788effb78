"""Tests of the engine (nnconsole.engine), one folder per package; here the modules at the engine's top."""
