"""The TRAINING tab's search trials: each trial of ``nnconsole search`` (an ordinary run tagged by ``trial.json``)
with its parameters, best validation error, multiply-adds and state, and "Open as project" for any of them.

Rows come from the run history's rows (``history.RunRow``) and ``nnconsole.engine.rundir.trials.read_trial``:
the state is the one the search recorded when the trial ended (complete, pruned, failed, stopped), else the
run's own (a trial whose run is going is running; one whose search was killed reads as its run does). The
panel hides itself for a project without trials. "Open as project" writes the trial's snapshot project (the
run's ``project.yaml``, dataset paths absolute) into a new folder the user names, never over an existing one,
and opens it.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (QAbstractItemView, QFileDialog, QHBoxLayout, QHeaderView, QLabel, QPushButton,
                               QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget)

from nnconsole.app.training.tradeoff import run_cost
from nnconsole.engine.project.io import load_project, save_project
from nnconsole.engine.rundir.protocol import RESOLVED_FILE, RunStatus, TrialStatus
from nnconsole.engine.rundir.trials import read_trial

COLUMNS = ("Trial", "Parameters", "Error", "Multiply-adds", "State")
# A trial whose end was not recorded (its search was killed) reads as its run does.
RUN_STATES = {RunStatus.RUNNING: TrialStatus.RUNNING, RunStatus.FINISHED: TrialStatus.COMPLETE,
              RunStatus.STOPPED: TrialStatus.STOPPED, RunStatus.FAILED: TrialStatus.FAILED}
STATE_COLORS = {TrialStatus.RUNNING: "#1f5fbf", TrialStatus.COMPLETE: "#1e6b1e", TrialStatus.PRUNED: "#9a5b00",
                TrialStatus.STOPPED: "#9a5b00", TrialStatus.FAILED: "#b00000"}


@dataclass
class TrialRow:
    """One trial as the table lists it."""

    number: int
    run_dir: str
    params: Dict[str, Any]
    changes: List[str]
    error: Optional[float]
    multiply_adds: Optional[int]
    state: TrialStatus
    duplicate_of: Optional[int] = None  # the same candidate as this earlier trial: not trained again, its run

    @property
    def label(self) -> str:
        return f"trial {self.number}"

    def describe(self) -> str:
        """Its values and structure changes in one line: ``learning_rate=0.0031, remove fc2``."""
        values = [f"{k.split('.')[-1]}={v:.4g}" if isinstance(v, float) else f"{k.split('.')[-1]}={v}"
                  for k, v in self.params.items()]
        return ", ".join(values + list(self.changes)) or "(the project as it is)"


def trial_state(tags: dict, status: RunStatus) -> TrialStatus:
    """The recorded end state, else the run's: a trial recorded as running whose run has ended reads as the run."""
    recorded = tags.get("state")
    if recorded in [m.value for m in TrialStatus] and recorded != TrialStatus.RUNNING:
        return TrialStatus(recorded)
    return RUN_STATES.get(status, TrialStatus.FAILED)


def collect_trials(rows: Sequence) -> List[TrialRow]:
    """The trials among run-history rows, by trial number (a trial run again after a stop: its latest run)."""
    by_number: Dict[int, TrialRow] = {}
    for row in sorted(rows, key=lambda r: r.started):
        tags = read_trial(row.run_dir)
        if tags is None:
            continue
        macs = tags.get("multiply_adds")
        by_number[tags["trial"]] = TrialRow(
            number=tags["trial"], run_dir=row.run_dir,
            params=tags.get("params") if isinstance(tags.get("params"), dict) else {},
            changes=[str(c) for c in tags.get("changes") or [] if isinstance(tags.get("changes"), list)],
            error=row.best_error, multiply_adds=int(macs) if isinstance(macs, (int, float)) and macs else
            run_cost(row.run_dir, row.total_macs), state=trial_state(tags, row.status))
        for number in _duplicates(tags):
            by_number[number] = dataclasses.replace(by_number[tags["trial"]], number=number,
                                                    duplicate_of=tags["trial"])
    return [by_number[n] for n in sorted(by_number)]


def _duplicates(tags: dict) -> List[int]:
    """The later trials the search found to be this trial's candidate again (``trial.json``'s ``duplicates``)."""
    found = tags.get("duplicates")
    return [n for n in found if isinstance(n, int) and not isinstance(n, bool) and n != tags["trial"]] \
        if isinstance(found, list) else []


def write_trial_project(run_dir: str, folder: str, name: str) -> str:
    """Write the trial's snapshot project into the new ``folder`` as ``<folder>/project.yaml``; refuses an existing
    folder (nothing the user made is overwritten). Returns the project file."""
    if os.path.lexists(folder):
        raise FileExistsError(f"{folder} already exists: choose a new folder name (nothing was written)")
    project = load_project(os.path.join(run_dir, RESOLVED_FILE))
    project.name = name
    os.makedirs(folder)
    path = os.path.join(folder, "project.yaml")
    save_project(project, path, backup=False)
    return path


class SearchTrials(QWidget):
    """The trials table and its Open as project button; ``set_rows`` takes the history's rows."""

    def __init__(self, open_path: Callable[[str], Any] = lambda _p: None, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("search_trials")
        self.open_path = open_path  # opens a project file in the window (its files.open_path)
        self.trials: List[TrialRow] = []
        self.table = QTableWidget(0, len(COLUMNS), self)
        self.table.setObjectName("search_trials_table")
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SingleSelection)
        self.table.verticalHeader().hide()
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.Stretch)
        self.summary = QLabel(self)
        self.summary.setObjectName("search_trials_summary")
        self.open_button = QPushButton("Open as project...", self)
        self.open_button.setObjectName("search_trial_open")
        self.open_button.setToolTip("Write the selected trial's project into a new folder and open it")
        self.open_button.clicked.connect(self.open_selected)
        self.message = ""
        bar = QHBoxLayout()
        bar.addWidget(self.summary, 1)
        bar.addWidget(self.open_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.table)
        self.hide()

    def labels(self) -> Dict[str, str]:
        """Run directory -> "trial N", for the trade-off graph's names."""
        return {t.run_dir: t.label for t in self.trials if t.duplicate_of is None}

    def set_rows(self, rows: Sequence) -> None:
        selected = self.selected()
        self.trials = collect_trials(rows)
        self.setVisible(bool(self.trials))
        counts: Dict[TrialStatus, int] = {}
        for t in self.trials:
            counts[t.state] = counts.get(t.state, 0) + 1
        self.summary.setText(f"<b>Search trials</b>: {len(self.trials)} (" +
                             ", ".join(f"{n} {state}" for state, n in sorted(counts.items(), key=lambda kv: kv[0].value)) + ")")
        self.table.setRowCount(len(self.trials))
        for r, t in enumerate(self.trials):
            cells = (str(t.number), t.describe(), "" if t.error is None else f"{t.error:.4f}",
                     "" if t.multiply_adds is None else f"{t.multiply_adds:,}",
                     t.state.value if t.duplicate_of is None else f"{t.state.value}, as trial {t.duplicate_of}")
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if c in (0, 2, 3):
                    item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                if c == 4:
                    item.setForeground(QColor(STATE_COLORS.get(t.state, "#000000")))
                if c == 1:
                    item.setToolTip(t.describe())
                if c == 4 and t.duplicate_of is not None:
                    item.setToolTip(f"The same candidate as trial {t.duplicate_of}: not trained again; "
                                    "its values are that trial's")
                self.table.setItem(r, c, item)
        if selected is not None:
            self.select(selected.number)

    def select(self, number: int) -> None:
        for r, t in enumerate(self.trials):
            if t.number == number:
                self.table.selectRow(r)

    def selected(self) -> Optional[TrialRow]:
        row = self.table.currentRow()
        return self.trials[row] if 0 <= row < len(self.trials) else None

    def choose_folder(self, suggested: str) -> str:
        """The new folder's path, asked of the user (a name that does not exist yet)."""
        path, _ = QFileDialog.getSaveFileName(self, "Open the trial as a project: name a new folder", suggested)
        return path

    def open_selected(self) -> Optional[str]:
        """Write the selected trial's project into a new folder the user names, and open it."""
        trial = self.selected()
        if trial is None:
            self.message = "Select a trial first."
            return None
        parent = os.path.dirname(os.path.dirname(os.path.dirname(trial.run_dir)))  # beside the results folder
        folder = self.choose_folder(os.path.join(parent, f"trial_{trial.number}"))
        if not folder:
            return None
        try:
            path = write_trial_project(trial.run_dir, folder, os.path.basename(folder))
        except (OSError, ValueError) as exc:
            self.message = str(exc)
            return None
        self.message = f"Trial {trial.number} written to {path}"
        self.open_path(path)
        return path
