"""Run history: every run of the project from its results folder, newest first, with compare boxes.

Rows come from ``nnconsole.engine.rundir.store.list_runs`` and ``effective_status`` (a running run whose process is
gone reads as failed), so runs started from the CLI appear here too. A run's title and note are the GUI's
own file in the run directory (``nnconsole.engine.rundir.notes``); a right click asks for the run's menu
(``run_menu``), and failed or empty runs can be hidden.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import List, Optional

from PySide6.QtCore import QPoint, Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (QAbstractItemView, QCheckBox, QHBoxLayout, QHeaderView, QLabel, QPushButton,
                               QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget)

from nnconsole.app.training.run_manage import is_failed_or_empty
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.protocol import RunStatus
from nnconsole.engine.rundir.notes import read_note
from nnconsole.app.widgets.rich_text import plain_tooltip

STATUS_COLORS = {RunStatus.RUNNING: "#1f5fbf", RunStatus.FINISHED: "#1e6b1e", RunStatus.STOPPED: "#9a5b00",
                 RunStatus.FAILED: "#b00000"}
COLUMNS = ("Compare", "Date", "N", "Logical batch", "Best val. error", "Status", "Name")
NAME_COLUMN = 6


@dataclass
class RunRow:
    """One run as the history lists it."""

    run_dir: str
    name: str
    started: float
    workers: int
    logical_batch: int
    best_error: Optional[float]
    best_epoch: Optional[int]
    status: RunStatus
    message: str
    pid: Optional[int]
    epoch: int
    total_macs: Optional[int]
    iteration: int = 0
    title: str = ""  # the user's (note.json); '' shows the folder name
    note: str = ""

    @property
    def label(self) -> str:
        return self.title or self.name

    @property
    def failed_or_empty(self) -> bool:
        return is_failed_or_empty(self.status, self.run_dir, self.iteration)

    @property
    def date(self) -> str:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.started))


def collect_runs(root: str, listing: Optional[List[str]] = None) -> List[RunRow]:
    """Every run under a results root, newest first (``listing``: ``runs.list_runs(root)`` if already read)."""
    rows = []
    for run_dir in runs.list_runs(root) if listing is None else listing:
        st = runs.effective_status(run_dir)
        if st is None:
            continue
        note = read_note(run_dir)
        rows.append(RunRow(os.path.abspath(run_dir), os.path.basename(run_dir), st.started, st.workers,
                           st.logical_batch, st.best_validation_error, st.best_epoch, st.status, st.message,
                           st.pid, st.epoch, st.total_macs, st.iteration, note.title, note.note))
    rows.sort(key=lambda r: (r.started, r.name), reverse=True)
    return rows


class RunHistory(QWidget):
    """The table of runs plus Refresh, Open folder and Replay buttons, and a right-click menu per run."""

    run_selected = Signal(str)  # run directory of the clicked row
    compare_changed = Signal(list)  # run directories whose Compare box is ticked
    open_folder_requested = Signal(str)
    replay_requested = Signal(str)
    refresh_requested = Signal()
    menu_requested = Signal(str, QPoint)  # run directory of the right-clicked row, global position

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("run_history")
        self.rows: List[RunRow] = []  # the rows shown (hidden ones left out), in table order
        self.all_rows: List[RunRow] = []
        self._filling = False
        self.table = QTableWidget(0, len(COLUMNS), self)
        self.table.setObjectName("run_history_table")
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.table.verticalHeader().hide()
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeToContents)
        header.setSectionResizeMode(NAME_COLUMN, QHeaderView.Stretch)
        self.table.itemSelectionChanged.connect(self._selection_changed)
        self.table.itemChanged.connect(self._item_changed)
        self.table.setContextMenuPolicy(Qt.CustomContextMenu)
        self.table.customContextMenuRequested.connect(self._context_menu)
        self.hide_failed = QCheckBox("Hide failed and empty", self)
        self.hide_failed.setObjectName("history_hide_failed")
        self.hide_failed.setToolTip("Leave out runs that failed, and runs that ended before training anything")
        self.hide_failed.toggled.connect(lambda _on: self.set_rows(self.all_rows))
        self.title = QLabel("<b>Run history</b>", self)
        buttons = QHBoxLayout()
        self.refresh_button = QPushButton("Refresh", self)
        self.open_button = QPushButton("Open folder", self)
        self.open_button.setToolTip("Show the selected run's directory in the file manager")
        self.replay_button = QPushButton("Replay", self)
        self.replay_button.setToolTip("nnconsole replay: train the selected run again from its snapshot and "
                                      "check that the metrics match")
        for button, name, handler in ((self.refresh_button, "history_refresh", self.refresh_requested.emit),
                                      (self.open_button, "history_open_folder", self._open_folder),
                                      (self.replay_button, "history_replay", self._replay)):
            button.setObjectName(name)
            button.clicked.connect(lambda _=False, h=handler: h())
            buttons.addWidget(button)
        buttons.addStretch(1)
        buttons.addWidget(self.hide_failed)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.title)
        layout.addWidget(self.table, 1)
        layout.addLayout(buttons)

    def set_rows(self, rows: List[RunRow]) -> None:
        """Show ``rows`` (every run of the project; failed and empty ones left out when hidden)."""
        self.all_rows = list(rows)
        shown = [row for row in rows if not (self.hide_failed.isChecked() and row.failed_or_empty)]
        hidden = len(rows) - len(shown)
        rows = shown
        checked = set(self.checked_runs())
        selected = self.selected_run()
        self._filling = True
        try:
            self.table.setRowCount(len(rows))
            for r, row in enumerate(rows):
                box = QTableWidgetItem()
                box.setFlags(Qt.ItemIsUserCheckable | Qt.ItemIsEnabled | Qt.ItemIsSelectable)
                box.setCheckState(Qt.Checked if row.run_dir in checked else Qt.Unchecked)
                box.setData(Qt.UserRole, row.run_dir)
                box.setToolTip("overlay this run's curves")
                error = "-" if row.best_error is None else f"{row.best_error:.4f}"
                if row.best_epoch:
                    error += f" (ep. {row.best_epoch})"
                cells = [box, QTableWidgetItem(row.date), QTableWidgetItem(str(row.workers)),
                         QTableWidgetItem(str(row.logical_batch or "-")), QTableWidgetItem(error),
                         QTableWidgetItem(str(row.status)), QTableWidgetItem(row.label)]
                cells[5].setForeground(QBrush(QColor(STATUS_COLORS.get(row.status, "#222222"))))
                tip = "\n".join(t for t in (row.run_dir, row.note, row.message) if t)
                for c, item in enumerate(cells):
                    if c:
                        item.setToolTip(plain_tooltip(tip))  # the run's note and message: the user's words
                    if 2 <= c < NAME_COLUMN:
                        item.setTextAlignment(Qt.AlignCenter)
                    self.table.setItem(r, c, item)
            self.rows = list(rows)
        finally:
            self._filling = False
        self.title.setText(f"<b>Run history</b> ({len(rows)} run{'s' if len(rows) != 1 else ''}"
                           + (f", {hidden} hidden" if hidden else "") + ")")
        if selected:
            self.select_run(selected, emit=False)
        if checked and set(self.checked_runs()) != checked:
            self.compare_changed.emit(self.checked_runs())

    def row_of(self, run_dir: str) -> int:
        target = os.path.abspath(run_dir)
        return next((i for i, row in enumerate(self.rows) if row.run_dir == target), -1)

    def select_run(self, run_dir: str, emit: bool = True) -> None:
        r = self.row_of(run_dir)
        if r < 0:
            return
        if not emit:
            self.table.blockSignals(True)
        self.table.selectRow(r)
        if not emit:
            self.table.blockSignals(False)

    def selected_run(self) -> Optional[str]:
        rows = self.table.selectionModel().selectedRows() if self.table.selectionModel() else []
        if not rows or rows[0].row() >= len(self.rows):
            return None
        return self.rows[rows[0].row()].run_dir

    def checked_runs(self) -> List[str]:
        out = []
        for r in range(self.table.rowCount()):
            item = self.table.item(r, 0)
            if item is not None and item.checkState() == Qt.Checked:
                out.append(item.data(Qt.UserRole))
        return out

    def set_checked(self, run_dir: str, on: bool) -> None:
        r = self.row_of(run_dir)
        if r >= 0:
            self.table.item(r, 0).setCheckState(Qt.Checked if on else Qt.Unchecked)

    def _selection_changed(self) -> None:
        run_dir = self.selected_run()
        if run_dir:
            self.run_selected.emit(run_dir)

    def _item_changed(self, item: QTableWidgetItem) -> None:
        if not self._filling and item.column() == 0:
            self.compare_changed.emit(self.checked_runs())

    def _context_menu(self, pos: QPoint) -> None:
        item = self.table.itemAt(pos)
        if item is None or item.row() >= len(self.rows):
            return
        self.table.selectRow(item.row())
        self.menu_requested.emit(self.rows[item.row()].run_dir, self.table.viewport().mapToGlobal(pos))

    def _open_folder(self) -> None:
        run_dir = self.selected_run()
        if run_dir:
            self.open_folder_requested.emit(run_dir)

    def _replay(self) -> None:
        run_dir = self.selected_run()
        if run_dir:
            self.replay_requested.emit(run_dir)
