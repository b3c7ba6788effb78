"""A long CLI command started detached from the GUI (``nnconsole search``, ``nnconsole study batch``).

``DetachedCommand`` starts ``nnconsole ARGS`` as Run starts ``nnconsole train`` (``engine_process.start_detached``:
its own session, stdout and stderr in files of a private folder in the results root), so the command outlives
the GUI and is resumed by running it again; it hands on the command's new lines every ``POLL_MS``, stops it
as Ctrl-C does (SIGTERM, which these commands treat as KeyboardInterrupt: running runs end with a checkpoint)
and reports its exit code. One command at a time per object; the subclasses build the arguments.
"""
from __future__ import annotations

import os
import signal
import subprocess
from typing import List, Optional

from PySide6.QtCore import QObject, QTimer, Signal

from nnconsole.app.bridge.engine_process import OutputTail, output_folder, start_detached
from nnconsole.engine.rundir import store as runs

POLL_MS = 500  # how often the command's output files are read
OUTPUT_FILES = ("stdout", "stderr")


class DetachedCommand(QObject):
    """One detached ``nnconsole ...`` at a time: start it, read its lines, stop it (SIGTERM = Ctrl-C)."""

    output_received = Signal(str)  # new text of the command's stdout and stderr
    finished = Signal(int)  # its exit code (3: stopped, rerun to resume)
    running_changed = Signal(bool)

    def __init__(self, parent: Optional[QObject] = None) -> None:
        super().__init__(parent)
        self._child: Optional[subprocess.Popen] = None
        self._tails: List[OutputTail] = []
        self.folder = ""
        self._timer = QTimer(self)
        self._timer.setInterval(POLL_MS)
        self._timer.timeout.connect(self._poll)

    def is_running(self) -> bool:
        return self._child is not None

    @property
    def pid(self) -> Optional[int]:
        return self._child.pid if self._child is not None else None

    def start_command(self, args: List[str], project_path: str) -> None:
        """``nnconsole ARGS`` in its own session, in the project's folder, output in the project's results root."""
        if self._child is not None:
            raise RuntimeError("a command is already running")
        self.folder, _made = output_folder(runs.results_root(project_path))
        self._child = start_detached(args, os.path.dirname(os.path.abspath(project_path)), self.folder)
        self._tails = [OutputTail(os.path.join(self.folder, name)) for name in OUTPUT_FILES]
        self._timer.start()
        self.running_changed.emit(True)

    def stop(self) -> None:
        """Ask the command to stop as Ctrl-C does: its running runs stop with a checkpoint and run again on resume."""
        if self._child is not None and self._child.poll() is None:
            self._child.send_signal(signal.SIGTERM)

    def wait(self, seconds: float) -> Optional[int]:
        """Wait up to ``seconds`` for the command to end (tests, application exit); its exit code or None."""
        if self._child is None:
            return None
        try:
            self._child.wait(seconds)
        except subprocess.TimeoutExpired:
            return None
        code = self._child.returncode
        self._poll()
        return code

    def error_text(self) -> str:
        """The last command's stderr as written so far (its error message, for one that failed)."""
        if not self.folder:
            return ""
        try:
            with open(os.path.join(self.folder, "stderr"), "rb") as fh:
                return fh.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def _poll(self) -> None:
        text = "".join(tail.read() for tail in self._tails)
        if text:
            self.output_received.emit(text)
        if self._child is not None and self._child.poll() is not None:
            code = self._child.returncode
            self._child = None
            self._timer.stop()
            self.running_changed.emit(False)
            self.finished.emit(int(code))
