"""nnconsole desktop app (PySide6): views and edits projects, drives the engine via its CLI."""
from console_app.qt_compat import protect_none_refcount as _protect_none_refcount

_protect_none_refcount()  # PySide6 6.12.0 on Python < 3.12 drops references to None; see qt_compat
