"""Unexpected errors in the GUI process: shown in a dialog and appended to a log file, not lost on stderr.

``install`` replaces ``sys.excepthook`` (errors raised in Qt slots and event handlers end there) and
``threading.excepthook`` (errors in background threads) while the application runs. Each error is
written to :func:`error_log_path` first, then shown in a message box whose details hold the traceback
and which says where the log is. An error in another thread is shown by the GUI thread (a queued
signal). Ctrl+C still goes to Python's own hook.
"""
from __future__ import annotations

import datetime
import os
import sys
import threading
import traceback
from typing import Callable, Optional

from PySide6.QtCore import QObject, Signal

LOG_NAME = "gui-errors.log"


def error_log_path() -> str:
    """``$XDG_STATE_HOME/nnconsole/gui-errors.log`` (default ``~/.local/state/nnconsole/gui-errors.log``)."""
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(state, "nnconsole", LOG_NAME)


def log_error(details: str, where: str = "GUI") -> Optional[str]:
    """Append one timestamped traceback to the log; returns its path, or None when it cannot be written."""
    path = error_log_path()
    stamp = datetime.datetime.now().isoformat(timespec="seconds")
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"--- {stamp} unexpected error in the {where}\n{details}\n")
    except OSError:
        return None
    return path


def show_error_dialog(summary: str, details: str, log_path: Optional[str]) -> None:
    """The message box: what failed, where the log is, the traceback under "Show Details..."."""
    from PySide6.QtWidgets import QApplication, QMessageBox

    where = (f"The details were saved to {log_path}; please include them when you report this."
             if log_path else "The details could not be saved to a log file; copy them from below.")
    box = QMessageBox(QMessageBox.Icon.Critical, "Unexpected error",
                      f"nnconsole hit an unexpected error: {summary}\n\nYour project is not affected by this "
                      f"message; save your work if the console seems wrong.\n\n{where}",
                      QMessageBox.StandardButton.Ok, QApplication.activeWindow())
    box.setDetailedText(details)
    box.exec()


class _Reporter(QObject):
    """Lives in the GUI thread; ``report`` emitted from any thread shows the dialog there."""

    report = Signal(str, str, object)

    def __init__(self) -> None:
        super().__init__()
        self.showing = False
        self.report.connect(self._show)

    def _show(self, summary: str, details: str, log_path: Optional[str]) -> None:
        if self.showing:  # an error while the dialog is open: logged, not stacked
            return
        self.showing = True
        try:
            show_error_dialog(summary, details, log_path)
        except Exception:  # noqa: BLE001 - the hook must never raise; the error is in the log already
            pass
        finally:
            self.showing = False


def install() -> Callable[[], None]:
    """Route unexpected errors to the log and the dialog; returns the function that restores the old hooks."""
    reporter = _Reporter()
    previous_sys, previous_thread = sys.excepthook, threading.excepthook

    def handle(exc_type, exc, tb, where: str) -> None:
        details = "".join(traceback.format_exception(exc_type, exc, tb))
        log_path = log_error(details, where)
        summary = f"{exc_type.__name__}: {exc}" if str(exc) else exc_type.__name__
        reporter.report.emit(summary, details, log_path)

    def sys_hook(exc_type, exc, tb) -> None:
        if issubclass(exc_type, KeyboardInterrupt):
            previous_sys(exc_type, exc, tb)
            return
        handle(exc_type, exc, tb, "GUI")

    def thread_hook(args) -> None:
        if args.exc_type is SystemExit:
            return
        name = args.thread.name if args.thread is not None else "?"
        handle(args.exc_type, args.exc_value, args.exc_traceback, f"background thread {name}")

    sys.excepthook, threading.excepthook = sys_hook, thread_hook

    def uninstall() -> None:
        sys.excepthook, threading.excepthook = previous_sys, previous_thread
        reporter.deleteLater()

    uninstall.reporter = reporter  # kept alive with the hooks
    return uninstall
