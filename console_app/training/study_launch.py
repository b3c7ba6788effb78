"""Starting a large-batch study from the Study view: the "Start study..." dialog and the Start / Stop bar.

The dialog asks for what ``nnconsole study batch`` takes (worker counts, policies, warm-ups, tolerance, epochs,
points at once, the study's name), prefilled from the project (workers 1,2,4,8, policies none and linear,
warm-up 0, tolerance 0.5 point, the project's max_epoch, the name the CLI would give) and checked with the
CLI's own rules (``nnconsole.engine.plan.study_values``): a bad value is named in the dialog, which stays open.
``StudyLaunch`` saves the project first when it has unsaved changes (the CLI reads the file, as Run does), runs
the command through the bridge (``nnconsole.app.bridge.study_process``, detached, so the study outlives the
GUI), shows its latest progress line, stops it as Ctrl-C does, and names the CLI's own message when it fails.
"""
from __future__ import annotations

import html
import re
from typing import Any, Callable, List, Optional

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QCheckBox, QDialog, QDialogButtonBox, QDoubleSpinBox, QFormLayout, QHBoxLayout,
                               QLabel, QLineEdit, QPushButton, QSpinBox, QVBoxLayout, QWidget)

from nnconsole.app.bridge.study_process import StudyProcess, StudyRequest
from nnconsole.engine.errors import ExitCode
from nnconsole.engine.plan.study_values import (parse_name, parse_policies, parse_tolerance, parse_warmups,
                                                parse_workers)
from nnconsole.engine.rundir.batch_study import POLICIES

ERROR_COLOR = "#b00000"


def default_study_name(project_name: str) -> str:
    """The CLI's default name (``<project name>-batch``), with characters a study name may not hold replaced."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", project_name or "project").lstrip(".") or "project"
    return f"{name[:94]}-batch"


def _values(numbers) -> str:
    return ",".join(f"{n:g}" for n in numbers)


class StudyStartDialog(QDialog):
    """The values of one ``nnconsole study batch``; ``request`` is set when the user starts it with valid values."""

    def __init__(self, project: Any, previous: Optional[StudyRequest] = None,
                 parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Start a large-batch study")
        self.setObjectName("study_start_dialog")
        self.request: Optional[StudyRequest] = None
        given = previous or StudyRequest(name=default_study_name(project.name))
        self.workers = QLineEdit(_values(given.workers), self)
        self.workers.setObjectName("study_workers")
        self.workers.setToolTip("worker counts to train, separated by commas; 1 (the baseline) among them")
        self.policies = {}
        row = QHBoxLayout()
        for policy in POLICIES:
            box = QCheckBox(policy, self)
            box.setObjectName(f"study_policy_{policy}")
            box.setChecked(policy in given.policies)
            self.policies[policy] = box
            row.addWidget(box)
        row.addStretch(1)
        self.warmups = QLineEdit(_values(given.warmups), self)
        self.warmups.setObjectName("study_warmups")
        self.warmups.setToolTip("warm-up lengths in epochs, separated by commas; trained only where the learning "
                                "rate is scaled")
        self.tolerance = QDoubleSpinBox(self)
        self.tolerance.setObjectName("study_tolerance")
        self.tolerance.setRange(0.0, 99.99)
        self.tolerance.setDecimals(2)
        self.tolerance.setSingleStep(0.1)
        self.tolerance.setSuffix(" point(s)")
        self.tolerance.setValue(given.tolerance_points)
        self.epochs = QSpinBox(self)
        self.epochs.setObjectName("study_epochs")
        self.epochs.setRange(0, 1_000_000)
        self.epochs.setSpecialValueText(f"the project's ({project.config.max_epoch})")
        self.epochs.setValue(given.epochs or 0)
        self.parallel = QSpinBox(self)
        self.parallel.setObjectName("study_parallel")
        self.parallel.setRange(1, 1024)
        self.parallel.setValue(given.parallel)
        self.parallel.setToolTip("points trained at once; never more processes than this machine's devices")
        self.name = QLineEdit(given.name or default_study_name(project.name), self)
        self.name.setObjectName("study_name")
        self.error = QLabel(self)
        self.error.setObjectName("study_start_error")
        self.error.setWordWrap(True)
        self.error.setStyleSheet(f"color: {ERROR_COLOR}")
        form = QFormLayout()
        form.addRow("Worker counts", self.workers)
        form.addRow("Learning-rate policies", row)
        form.addRow("Warm-ups (epochs)", self.warmups)
        form.addRow("Tolerance", self.tolerance)
        form.addRow("Epochs per point", self.epochs)
        form.addRow("Points at once", self.parallel)
        form.addRow("Study name", self.name)
        buttons = QDialogButtonBox(QDialogButtonBox.Cancel, self)
        self.start_button = buttons.addButton("Start study", QDialogButtonBox.AcceptRole)
        self.start_button.setObjectName("study_start_confirm")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        note = QLabel("Each (workers, policy, warm-up) is one run; N > 1 workers are simulated exactly on this "
                      "machine. Starting a study of the same name again resumes it.", self)
        note.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(note)
        layout.addWidget(self.error)
        layout.addWidget(buttons)
        self.setMinimumWidth(480)

    def values(self) -> StudyRequest:
        """The request the fields describe; ValueError with the CLI's one-line message for a bad value."""
        chosen = [p for p in POLICIES if self.policies[p].isChecked()]
        if not chosen:
            raise ValueError("--policy: tick at least one learning-rate policy")
        return StudyRequest(workers=parse_workers(self.workers.text()), policies=parse_policies(",".join(chosen)),
                            warmups=parse_warmups(self.warmups.text()),
                            tolerance_points=parse_tolerance(f"{self.tolerance.value():g}") * 100.0,
                            epochs=self.epochs.value() or None, parallel=self.parallel.value(),
                            name=parse_name(self.name.text().strip()))

    def accept(self) -> None:
        """Start only with valid values: a bad one is named here and the dialog stays open."""
        try:
            self.request = self.values()
        except ValueError as exc:
            self.request = None
            self.error.setText(str(exc))
            self.adjustSize()  # room for the message's lines
            return
        self.error.clear()
        super().accept()


class StudyLaunch(QWidget):
    """"Start study..." and "Stop study", the study's latest line, and what became of it."""

    study_started = Signal(str)  # the study's name: the view follows it
    output_received = Signal(str)  # the command's new lines (the view re-reads the study on each)

    def __init__(self, document: Any, ensure_saved: Optional[Callable[[], bool]] = None,
                 parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("study_launch")
        self.document = document
        self._ensure_saved = ensure_saved
        self.last_request: Optional[StudyRequest] = None
        self._failures: List[str] = []  # the study's "point ... failed: ..." lines
        self.process = StudyProcess(self)
        self.start_button = QPushButton("\u25B6  Start study...", self)
        self.start_button.setObjectName("study_start")
        self.start_button.setToolTip("Run nnconsole study batch on the saved project: worker counts, policies and "
                                     "warm-ups to train")
        self.stop_button = QPushButton("\u25A0  Stop study", self)
        self.stop_button.setObjectName("study_stop")
        self.stop_button.setToolTip("Stop as Ctrl-C does: running points keep a checkpoint; Start again resumes")
        self.stop_button.setEnabled(False)
        self.progress = QLabel(self)
        self.progress.setObjectName("study_progress")
        self.progress.setTextFormat(Qt.RichText)
        self.progress.setWordWrap(True)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.start_button)
        layout.addWidget(self.stop_button)
        layout.addWidget(self.progress, 1)
        self.start_button.clicked.connect(self.ask_and_start)
        self.stop_button.clicked.connect(self.stop)
        self.process.output_received.connect(self._output)
        self.process.running_changed.connect(self._running_changed)
        self.process.finished.connect(self._finished)

    def _say(self, text: str, error: bool = False) -> None:
        text = html.escape(text)
        self.progress.setText(f"<span style='color:{ERROR_COLOR}'>{text}</span>" if error else text)

    def _saved(self) -> bool:
        """The CLI reads the project file: save it first (asking, as Run does); False when it stays unsaved."""
        if self._ensure_saved is not None:
            if not self._ensure_saved():
                return False
        if not self.document.path or self.document.modified:
            self._say("Save the project first (File > Save): nnconsole study batch reads the project file.", True)
            return False
        return True

    def ask_and_start(self) -> bool:
        """Open the dialog; start the study it describes."""
        if self.process.is_running():
            return False
        dialog = StudyStartDialog(self.document.project, self.last_request, self.window())
        if dialog.exec() != QDialog.Accepted or dialog.request is None:
            return False
        return self.start(dialog.request)

    def start(self, request: StudyRequest) -> bool:
        """Save the project if needed, then run ``nnconsole study batch`` with ``request``."""
        if self.process.is_running() or not self._saved():
            return False
        self.last_request = request
        self._failures = []
        self.process.start(self.document.path, request)
        self._say(f"Starting study '{request.name}': {len(request.workers)} worker count(s) x "
                  f"{len(request.policies)} policy(ies)...")
        self.study_started.emit(request.name or default_study_name(self.document.project.name))
        return True

    def stop(self) -> None:
        if self.process.is_running():
            self._say("Stopping: running points stop with a checkpoint...")
            self.stop_button.setEnabled(False)
            self.process.stop()

    def _output(self, text: str) -> None:
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        self._failures += [line for line in lines if line.startswith("point ") and " failed" in line]
        if lines:
            self._say(lines[-1])
        self.output_received.emit(text)

    def _running_changed(self, running: bool) -> None:
        self.start_button.setEnabled(not running)
        self.stop_button.setEnabled(running)

    def _finished(self, code: int) -> None:
        if code == ExitCode.OK:
            self._say("Study complete: every point trained.")
        elif code == ExitCode.STOPPED:
            self._say("Study stopped: Start study... with the same values resumes it (complete points are kept).")
        else:
            lines = [line.strip() for line in self.process.error_text().splitlines() if line.strip()]
            lines = lines or self._failures  # a CLI refusal is on stderr; a point that failed, in its lines
            message = lines[-1] if lines else f"nnconsole study batch ended with exit code {code}"
            self._say(f"Study failed (exit code {code}): {message}", True)
