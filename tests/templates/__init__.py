"""Tests of the bundled project templates (nnconsole.templates): their data, and trainings reaching what their READMEs state."""
