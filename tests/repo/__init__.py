"""Checks of the repository: docs, import boundaries, markers, the test tree, scripts/."""
