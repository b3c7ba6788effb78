"""TRAINING tab: run/stop through the CLI, live learning curves, run history and the trade-off graph."""
