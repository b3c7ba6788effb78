"""The TRAINING tab's Study view: a large-batch study (``nnconsole study batch``, issue 30) as it goes.

It lists the open project's studies (``<results>/study/<name>/study.json``, read through
``nnconsole.engine.rundir.batch_study``), and for the chosen one shows the graphs (``study_plot``), a table of
its points (workers, logical batch, policy, warm-up, learning rate, error, predicted and measured seconds per
epoch, state), the recommendation sentence and "Apply to CONFIG", which sets ``multi_gpu.workers``,
``multi_gpu.scaling`` and ``multi_gpu.warmup_epochs`` (and turns ``multi_gpu.simulate_workers`` off, so the
plan is the recommended real one) as ONE undoable edit. The recommendation is the file's; while the study has
not written one yet, the same rule (``nnconsole.engine.plan.batch_recommendation.recommend``) is applied to the
points measured so far. The view re-reads a study when its file changes (a cheap stat every
``POLL_MS``); a study.json that cannot be read is named as such, never raised.
"""
from __future__ import annotations

import html
import os
from typing import Any, Callable, List, Optional, Tuple

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFont
from PySide6.QtWidgets import (QAbstractItemView, QComboBox, QHBoxLayout, QHeaderView, QLabel, QPushButton,
                               QSplitter, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget)

from nnconsole.app.config.commands import set_settings
from nnconsole.app.training.study_launch import StudyLaunch
from nnconsole.app.training.study_plot import COMPLETE, FAILED, RUNNING, STOPPED, StudyPlot
from nnconsole.engine.plan.batch_recommendation import recommend
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.batch_study import (STUDY_FILE, STUDY_FOLDER, BatchStudy, Recommendation, StudyPoint,
                                                 point_key, read_study)

POLL_MS = 1500
COLUMNS = ("Workers", "Logical batch", "Policy", "Warm-up", "LR", "Error", "Predicted s/epoch",
           "Measured s/epoch", "State")
STATE_COLORS = {RUNNING: "#1f5fbf", COMPLETE: "#1e6b1e", STOPPED: "#9a5b00", FAILED: "#b00000", "queued": "#5b6670"}
APPLY_TEXT = "Apply the batch study's recommendation"
NO_STUDY = ("No large-batch study yet. Press <b>Start study...</b> (or run <code>nnconsole study batch PROJECT "
            "--workers 1,2,4,8</code>) to train the project at several worker counts and learning-rate policies; "
            "its points appear here as they train.")


def recommendation_settings(rec: Recommendation) -> dict:
    """The CONFIG settings that make the project train as the recommendation says (real workers, no simulation)."""
    return {"multi_gpu.workers": int(rec.workers), "multi_gpu.scaling": rec.policy,
            "multi_gpu.warmup_epochs": float(rec.warmup_epochs), "multi_gpu.simulate_workers": 0}


def apply_recommendation(document: Any, rec: Recommendation) -> bool:
    """Set the recommendation's settings as one undo step; False when the project has them already."""
    return set_settings(document, recommendation_settings(rec), APPLY_TEXT)


def study_folders(results_root: Optional[str]) -> List[Tuple[str, str]]:
    """(name, folder) of every folder under ``<results>/study`` that holds a study.json, readable or not."""
    if not results_root:
        return []
    base = os.path.join(results_root, STUDY_FOLDER)
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return []
    return [(n, os.path.join(base, n)) for n in names if os.path.isfile(os.path.join(base, n, STUDY_FILE))]


def _stamp(folder: str) -> Tuple[int, int]:
    try:
        st = os.stat(os.path.join(folder, STUDY_FILE))
        return st.st_mtime_ns, st.st_size
    except OSError:
        return 0, -1


def _seconds(value: Optional[float]) -> str:
    return "" if value is None else f"{value:.3g}"


def point_cells(p: StudyPoint) -> Tuple[str, ...]:
    """A point's row in the table, in ``COLUMNS`` order."""
    return (str(p.workers) + (" (simulated)" if p.simulated else ""), str(p.logical_batch or ""), p.policy,
            f"{p.warmup_epochs:g}", f"{p.learning_rate:.4g}" if p.learning_rate else "",
            "" if p.validation_error is None else f"{p.validation_error * 100:.2f}%",
            _seconds(p.predicted_epoch_seconds), _seconds(p.measured_epoch_seconds), p.state)


class StudyView(QWidget):
    """Studies of the document's project: choice, graphs, points, recommendation and Apply to CONFIG."""

    run_requested = Signal(str)  # a point's run directory, to be shown in the TRAINING tab's curves

    def __init__(self, document: Any, ensure_saved: Optional[Callable[[], bool]] = None,
                 parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("study_view")
        self.document = document
        self._follow: Optional[str] = None  # the name of a study just started: chosen as soon as it appears
        self.launch = StudyLaunch(document, ensure_saved, self)
        self.launch.study_started.connect(self.follow)
        self.launch.output_received.connect(lambda _text: self.poll())
        self.study: Optional[BatchStudy] = None
        self.points: List[StudyPoint] = []  # the table's rows, in order
        self.recommendation: Optional[Recommendation] = None
        self.folders: List[Tuple[str, str]] = []
        self._stamps: dict = {}
        self.choice = QComboBox(self)
        self.choice.setObjectName("study_choice")
        self.choice.currentIndexChanged.connect(lambda _i: self.reload())
        self.summary = QLabel(NO_STUDY, self)
        self.summary.setObjectName("study_summary")
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.RichText)
        self.plot = StudyPlot(self)
        self.table = QTableWidget(0, len(COLUMNS), self)
        self.table.setObjectName("study_points")
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SingleSelection)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.cellDoubleClicked.connect(lambda row, _c: self.open_run(row))
        self.recommendation_label = QLabel(self)
        self.recommendation_label.setObjectName("study_recommendation")
        self.recommendation_label.setWordWrap(True)
        self.recommendation_label.setTextFormat(Qt.PlainText)
        self.apply_button = QPushButton("Apply to CONFIG", self)
        self.apply_button.setObjectName("study_apply")
        self.apply_button.setToolTip("Set Workers, Scaling policy and Warm-up epochs to the recommendation (and "
                                     "Simulate workers off), as one edit Undo reverts")
        self.apply_button.clicked.connect(self.apply)
        self.open_button = QPushButton("Show run", self)
        self.open_button.setObjectName("study_open_run")
        self.open_button.setToolTip("Show the selected point's run (its curves and log)")
        self.open_button.clicked.connect(lambda: self.open_run(self.table.currentRow()))
        self.message = QLabel(self)
        self.message.setObjectName("study_message")
        top = QHBoxLayout()
        top.addWidget(QLabel("Study:", self))
        top.addWidget(self.choice, 1)
        bottom = QHBoxLayout()
        bottom.addWidget(self.recommendation_label, 1)
        bottom.addWidget(self.apply_button)
        table_side = QWidget(self)
        lower = QVBoxLayout(table_side)
        lower.setContentsMargins(0, 0, 0, 0)
        lower.addWidget(self.table, 1)
        bar = QHBoxLayout()
        bar.addWidget(self.message, 1)
        bar.addWidget(self.open_button)
        lower.addLayout(bar)
        split = QSplitter(Qt.Vertical, self)
        split.addWidget(self.plot)
        split.addWidget(table_side)
        split.setSizes([460, 240])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.launch)
        layout.addLayout(top)
        layout.addWidget(self.summary)
        layout.addWidget(split, 1)
        layout.addLayout(bottom)
        document.reloaded.connect(self.refresh)
        document.path_changed.connect(lambda _p: self.refresh())
        self._poll = QTimer(self)
        self._poll.setInterval(POLL_MS)
        self._poll.timeout.connect(self.poll)
        self._poll.start()
        self.refresh()

    # ---- studies ------------------------------------------------------------------------------
    def results_root(self) -> Optional[str]:
        path = self.document.path
        return runs.results_root(path) if path else None

    def follow(self, name: str) -> None:
        """Show study ``name`` (one just started) now if it exists, else as soon as its study.json appears."""
        self._follow = name
        self.refresh()

    def refresh(self) -> None:
        """Re-list the project's studies (keeping the chosen one, or choosing the one followed) and show it."""
        folders = study_folders(self.results_root())
        current = self.choice.currentData()
        followed = next((folder for n, folder in folders if n == self._follow), None)
        if followed is not None:
            current, self._follow = followed, None
        if folders != self.folders or followed is not None:
            self.folders = folders
            self.choice.blockSignals(True)
            self.choice.clear()
            for name, folder in folders:
                self.choice.addItem(name, folder)
            index = max(0, self.choice.findData(current)) if current else max(0, len(folders) - 1)
            self.choice.setCurrentIndex(index if folders else -1)
            self.choice.blockSignals(False)
        self.choice.setVisible(bool(folders))
        self.reload()

    def poll(self) -> None:
        """Re-read when a study appeared, went or its file changed (a stat per study: cheap)."""
        folders = study_folders(self.results_root())
        stamps = {folder: _stamp(folder) for _n, folder in folders}
        if folders != self.folders or stamps != self._stamps:
            self.refresh()

    def reload(self) -> None:
        """Read and show the chosen study (None: no study, or one whose file cannot be read)."""
        self._stamps = {folder: _stamp(folder) for _n, folder in self.folders}
        folder = self.choice.currentData()
        self.study = read_study(folder) if folder else None
        if folder and self.study is None:
            self.summary.setText(f"<span style='color:#b00000'>The {STUDY_FILE} of study "
                                 f"<b>{html.escape(self.choice.currentText())}</b> cannot be read (damaged, or "
                                 "written by another version): run the study again to rewrite it.</span>")
            self.summary.setToolTip(os.path.join(folder, STUDY_FILE))
        elif self.study is None:
            self.summary.setText(NO_STUDY)
        else:
            self.summary.setText(self._describe(self.study))
        if self.study is not None or not folder:
            self.summary.setToolTip(os.path.join(folder, STUDY_FILE) if folder else "")
        study = self.study
        self.recommendation = None if study is None else (study.recommendation
                                                          or recommend(study.points, study.tolerance))
        self.plot.set_study(study, self.recommendation)
        self._fill_table(study.points if study is not None else [], self.recommendation)
        self._show_recommendation(study)

    def _describe(self, study: BatchStudy) -> str:
        counts: dict = {}
        for p in study.points:
            counts[p.state] = counts.get(p.state, 0) + 1
        states = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
        epochs = f", {study.epochs} epochs each" if study.epochs else ""
        return (f"<b>{html.escape(study.name)}</b>: {len(study.points)} points ({states or 'none yet'}), per-worker batch "
                f"{study.per_worker_batch}{epochs}, tolerance {study.tolerance * 100:g} point of error.")

    def _fill_table(self, points: List[StudyPoint], rec: Optional[Recommendation]) -> None:
        """The points by workers, policy and warm-up; the recommended one in bold."""
        self.points = sorted(points, key=lambda p: (p.workers, p.policy, p.warmup_epochs))
        self.table.setRowCount(len(self.points))
        bold = QFont()
        bold.setBold(True)
        chosen = point_key(rec.workers, rec.policy, rec.warmup_epochs) if rec is not None else None
        for r, p in enumerate(self.points):
            for c, text in enumerate(point_cells(p)):
                item = QTableWidgetItem(text)
                if p.key == chosen:
                    item.setFont(bold)
                if c in (0, 1, 3, 4, 5, 6, 7):
                    item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                if c == len(COLUMNS) - 1:
                    item.setForeground(QColor(STATE_COLORS.get(p.state, "#000000")))
                item.setToolTip(p.run_dir or "no run yet")
                self.table.setItem(r, c, item)

    def _show_recommendation(self, study: Optional[BatchStudy]) -> None:
        rec = self.recommendation
        if rec is not None:
            self.recommendation_label.setText(("Recommendation: " if study and study.recommendation else
                                               "Recommendation so far: ") + rec.reason)
        elif study is not None:
            self.recommendation_label.setText("No recommendation yet: it needs a complete 1-worker point to "
                                              "compare with.")
        else:
            self.recommendation_label.setText("")
        self.apply_button.setEnabled(rec is not None)

    # ---- actions ------------------------------------------------------------------------------
    def apply(self) -> bool:
        """Apply the recommendation to the project's settings (one undoable edit)."""
        rec = self.recommendation
        if rec is None:
            return False
        changed = apply_recommendation(self.document, rec)
        self.message.setText(f"CONFIG: {rec.workers} workers, scaling {rec.policy}, warm-up {rec.warmup_epochs:g} "
                             "epochs" + (" applied (Edit > Undo reverts it)." if changed else " already set."))
        return changed

    def open_run(self, row: int) -> Optional[str]:
        """Ask the tab to show the run of the point in ``row`` (a queued point has none yet)."""
        if not 0 <= row < len(self.points):
            self.message.setText("Select a point first.")
            return None
        run_dir = self.points[row].run_dir
        if not run_dir or not os.path.isdir(run_dir):
            self.message.setText(f"Point {self.points[row].key} has no run yet.")
            return None
        self.run_requested.emit(run_dir)
        return run_dir
