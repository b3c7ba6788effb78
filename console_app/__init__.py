"""nnconsole desktop app (PySide6): views and edits projects, drives the engine via its CLI."""
