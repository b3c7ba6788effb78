"""Run one slow pure function (loading a dataset) on a Python thread and hand the result back as a signal.

The result crosses to the GUI thread only through a queued Qt signal; each call gets a token so a
late result of an older request (the path changed meanwhile) can be ignored by the receiver.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Optional

from PySide6.QtCore import QObject, Signal


class BackgroundCall(QObject):
    """``start(fn, *args)`` -> ``finished(token, result, error)`` on the GUI thread."""

    finished = Signal(int, object, object)  # token, result or None, exception or None

    def __init__(self, parent: Optional[QObject] = None) -> None:
        super().__init__(parent)
        self._token = 0
        self._threads: list = []

    def start(self, fn: Callable[..., Any], *args: Any) -> int:
        self._token += 1
        token = self._token

        def work() -> None:
            try:
                result, error = fn(*args), None
            except Exception as exc:  # noqa: BLE001 - reported to the view, which shows it
                result, error = None, exc
            try:
                self.finished.emit(token, result, error)
            except RuntimeError:  # the receiver was deleted while we worked
                pass

        thread = threading.Thread(target=work, name=f"nnconsole-background-{token}", daemon=True)
        self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()
        return token

    def wait(self, timeout: float = 30.0) -> None:
        """Join the threads (tests, application exit)."""
        for t in list(self._threads):
            t.join(timeout)
