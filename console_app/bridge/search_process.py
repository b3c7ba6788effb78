"""``nnconsole search`` from the GUI: the K x G prediction (``--plan``) and the search itself, as the CLI runs them.

The GUI never imports the search engine (Optuna, the launcher): ``plan_search`` runs ``nnconsole search PROJECT
--plan`` in an ``EngineCommand`` (short, off the GUI thread) and hands its table on as text; ``SearchProcess``
starts ``nnconsole search PROJECT --parallel K --workers-per-trial G`` detached, as Run starts ``nnconsole train``
(its own session, output in files in the results folder), so a search outlives the GUI and is resumed by
running it again. Each trial is an ordinary run: the TRAINING tab lists it from the results folder
(``trial.json``), so this class only starts, stops and shows the search's own lines.
"""
from __future__ import annotations

import os
import signal
import subprocess
from typing import List, Optional

from PySide6.QtCore import QObject, QTimer, Signal

from nnconsole.app.bridge.engine_process import EngineCommand, OutputTail, output_folder, start_detached
from nnconsole.engine.rundir import store as runs

POLL_MS = 500  # how often the search's output files are read


def search_args(project_path: str, parallel: int = 1, workers: int = 1, plan: bool = False,
                trials: Optional[int] = None) -> List[str]:
    """The CLI arguments of a search (or its ``--plan``) of the project file ``project_path``."""
    args = ["search", os.path.abspath(project_path)]
    if plan:
        return args + ["--plan"]
    args += ["--parallel", str(int(parallel)), "--workers-per-trial", str(int(workers))]
    if trials:
        args += ["--trials", str(int(trials))]
    return args


def plan_search(command: EngineCommand, project_path: str) -> None:
    """Start ``nnconsole search PROJECT --plan`` in ``command``; its ``command_finished`` carries the table."""
    command.start(search_args(project_path, plan=True), cwd=os.path.dirname(os.path.abspath(project_path)))


class SearchProcess(QObject):
    """One ``nnconsole search`` at a time: start it detached, read its lines, stop it (SIGTERM = Ctrl-C)."""

    output_received = Signal(str)  # new text of the search's stdout and stderr
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

    def start(self, project_path: str, parallel: int, workers: int, trials: Optional[int] = None) -> None:
        """``nnconsole search PROJECT --parallel K --workers-per-trial G`` in its own session."""
        if self._child is not None:
            raise RuntimeError("a search is already running")
        self.folder, _made = output_folder(runs.results_root(project_path))
        self._child = start_detached(search_args(project_path, parallel, workers, trials=trials),
                                     os.path.dirname(os.path.abspath(project_path)), self.folder)
        self._tails = [OutputTail(os.path.join(self.folder, name)) for name in ("stdout", "stderr")]
        self._timer.start()
        self.running_changed.emit(True)

    def stop(self) -> None:
        """Ask the search to stop: its running trials stop with a checkpoint and run again on resume."""
        if self._child is not None and self._child.poll() is None:
            self._child.send_signal(signal.SIGTERM)

    def wait(self, seconds: float) -> Optional[int]:
        """Wait up to ``seconds`` for the search to end (tests, application exit); its exit code or None."""
        if self._child is None:
            return None
        try:
            self._child.wait(seconds)
        except subprocess.TimeoutExpired:
            return None
        code = self._child.returncode
        self._poll()
        return code

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
