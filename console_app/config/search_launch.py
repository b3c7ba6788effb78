"""The Search section's split and start: K trials at once x G workers each, the ``--plan`` prediction of every
split, and the Search button.

Both run the CLI through the bridge (``nnconsole.app.bridge.search_process``), on the project file as saved:
the prediction is ``nnconsole search PROJECT --plan`` (its table shown as the CLI prints it, so the GUI and the
terminal say the same), the search ``nnconsole search PROJECT --parallel K --workers-per-trial G``, detached;
its trials appear in the TRAINING tab as they run. An unsaved project is not searched (the CLI would read
the file as it was): the panel says to save first.
"""
from __future__ import annotations

from typing import Any, Optional

from PySide6.QtGui import QFont
from PySide6.QtWidgets import (QGroupBox, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QSpinBox, QVBoxLayout,
                               QWidget)

from nnconsole.app.bridge.engine_process import EngineCommand
from nnconsole.app.bridge.search_process import SearchProcess, plan_search
from nnconsole.engine.project.searched_properties import has_flags

MAX_LOG_LINES = 2000


class SearchLaunch(QGroupBox):
    """K and G, the prediction of each split, Search and Stop, and the search's own lines."""

    def __init__(self, document: Any, parent: Optional[QWidget] = None) -> None:
        super().__init__("Run the search", parent)
        self.setObjectName("search_launch")
        self.document = document
        self.parallel = QSpinBox(self)
        self.parallel.setObjectName("search_parallel")
        self.parallel.setRange(1, 1024)
        self.workers = QSpinBox(self)
        self.workers.setObjectName("search_workers_per_trial")
        self.workers.setRange(1, 1024)
        self.plan_button = QPushButton("Predict K x G", self)
        self.plan_button.setObjectName("search_plan")
        self.plan_button.setToolTip("nnconsole search PROJECT --plan: the predicted time of the budget for each "
                                    "split of this machine's devices, and which to use")
        self.search_button = QPushButton("\u25B6  Search", self)
        self.search_button.setObjectName("search_run")
        self.stop_button = QPushButton("\u25A0  Stop search", self)
        self.stop_button.setObjectName("search_stop")
        self.stop_button.setEnabled(False)
        row = QHBoxLayout()
        for widget in (QLabel("K trials at once", self), self.parallel, QLabel("x G workers each", self),
                       self.workers, self.plan_button, self.search_button, self.stop_button):
            row.addWidget(widget)
        row.addStretch(1)
        self.message = QLabel(self)
        self.message.setObjectName("search_message")
        self.message.setWordWrap(True)
        self.output = QPlainTextEdit(self)
        self.output.setObjectName("search_output")
        self.output.setReadOnly(True)
        self.output.setMaximumBlockCount(MAX_LOG_LINES)
        self.output.setFont(QFont("monospace"))
        self.output.setMinimumHeight(140)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(self.message)
        layout.addWidget(self.output)

        self.plan_command = EngineCommand(self)
        self.plan_command.command_finished.connect(self._planned)
        self.process = SearchProcess(self)
        self.process.output_received.connect(self._append)
        self.process.running_changed.connect(self._running_changed)
        self.process.finished.connect(self._finished)
        self.plan_button.clicked.connect(self.predict)
        self.search_button.clicked.connect(self.start)
        self.stop_button.clicked.connect(self.process.stop)
        self.sync()

    def sync(self) -> None:
        """Enabled only for a project with a search section or a layer property marked searched (the CLI refuses
        one with neither)."""
        has = self.document.project.search is not None or has_flags(self.document.project)
        self.plan_button.setEnabled(has and not self.plan_command.is_running())
        self.search_button.setEnabled(has and not self.process.is_running())
        if not has:
            self.message.setText("Tick 'This project has a search section' above, or a property's Search box in EDIT, "
                                 "to search it.")

    def _saved_path(self) -> Optional[str]:
        """The project file the CLI will read, or None (and a message) when the document differs from it."""
        path = self.document.path
        if not path or self.document.modified:
            self.message.setText("Save the project first (File > Save): nnconsole search reads the project file.")
            return None
        return path

    # ---- the prediction -----------------------------------------------------------------------
    def predict(self) -> bool:
        path = self._saved_path()
        if path is None or self.plan_command.is_running():
            return False
        self.message.setText("Predicting each K x G split (nnconsole search --plan)...")
        self.plan_button.setEnabled(False)
        plan_search(self.plan_command, path)
        return True

    def _planned(self, code: int, stdout: str, stderr: str) -> None:
        self.sync()
        if code == 0:
            self.output.setPlainText(stdout.rstrip())
            self.message.setText("Predicted time of the budget for each split: rows marked 'fastest' and "
                                 "'recommended for TPE' say which to use.")
        else:
            self.output.setPlainText((stderr or stdout).rstrip())
            self.message.setText(f"nnconsole search --plan failed (exit code {code}).")

    # ---- the search ---------------------------------------------------------------------------
    def start(self) -> bool:
        path = self._saved_path()
        if path is None or self.process.is_running():
            return False
        self.output.clear()
        self.process.start(path, self.parallel.value(), self.workers.value())
        self.message.setText(f"Searching: {self.parallel.value()} trial(s) at once x {self.workers.value()} "
                             "worker(s); the trials show in the TRAINING tab.")
        return True

    def _append(self, text: str) -> None:
        self.output.appendPlainText(text.rstrip("\n"))

    def _running_changed(self, running: bool) -> None:
        self.stop_button.setEnabled(running)
        self.sync()

    def _finished(self, code: int) -> None:
        words = {0: "the budget is spent", 3: "stopped: press Search again to resume"}.get(code,
                                                                                          f"exit code {code}")
        self.message.setText(f"Search ended: {words}.")
