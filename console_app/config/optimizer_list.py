"""The CONFIG tab's optimizer list (issue 17): the CONFIG tab's optimizer and the project's other optimizers.

The first row is the optimizer the forms above edit (network Main, the training dataset, every iteration).
Each other row is one ``Project.optimizers`` entry: its name, the network it trains, its dataset, solver,
learning rate, update interval and range (start/end iteration, 0 = no bound). Add and Remove, and every cell
edit, replace the list as one undoable step; a value that does not fit is refused with a message.
"""
from __future__ import annotations

import copy
import math
from typing import Any, Callable, List, Optional

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QAbstractItemView, QComboBox, QGroupBox, QHBoxLayout, QPushButton, QTableWidget,
                               QTableWidgetItem, QVBoxLayout)

from nnconsole.app.config.commands import set_setting
from nnconsole.app.config.optimizer_details import OptimizerDetailsDialog
from nnconsole.app.config.optimizer_form import learning_rate_on_switch, solver_params_for
from nnconsole.engine.project.model import DATASET_SPLITS, MAIN_NETWORK, ExtraOptimizer, Optimizer
from nnconsole.engine.project.schema import SOLVERS
from nnconsole.engine.project.structure import FIRST_OPTIMIZER

COLUMNS = ("Name", "Network", "Dataset", "Solver", "Learning rate", "Update interval", "Start iteration",
           "End iteration")
NAME, NETWORK, DATASET, SOLVER, RATE, INTERVAL, START, END = range(len(COLUMNS))


def _count(text: str, what: str, minimum: int) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise ValueError(f"{what} must be a whole number, got {text!r}") from None
    if value < minimum:
        raise ValueError(f"{what} must be {minimum} or more, got {value}")
    return value


def _rate(text: str) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        raise ValueError(f"the learning rate must be a number, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"the learning rate must be a positive number, got {text!r}")
    return value


class OptimizerList(QGroupBox):
    """The optimizers table with Add and Remove; ``message`` says what an edit did or why it was refused."""

    message = Signal(str)

    def __init__(self, document: Any, parent: Optional[Any] = None) -> None:
        super().__init__("Optimizers", parent)
        self.setObjectName("optimizer_list")
        self.document = document
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setObjectName("optimizer_table")
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.table.verticalHeader().setVisible(False)
        self.table.setMinimumHeight(110)
        self.add_button = QPushButton("Add Optimizer")
        self.add_button.setObjectName("add_optimizer")
        self.remove_button = QPushButton("Remove")
        self.remove_button.setObjectName("remove_optimizer")
        self.details_button = QPushButton("Details...")
        self.details_button.setObjectName("optimizer_details_button")
        self.details_button.setToolTip("Solver parameters, weight decay, schedule and warm-up of the selected "
                                       "optimizer (or double-click its name)")
        self.details_dialog: Optional[OptimizerDetailsDialog] = None
        buttons = QHBoxLayout()
        buttons.addWidget(self.add_button)
        buttons.addWidget(self.remove_button)
        buttons.addWidget(self.details_button)
        buttons.addStretch(1)
        box = QVBoxLayout(self)
        box.addWidget(self.table)
        box.addLayout(buttons)
        self._syncing = False
        self.add_button.clicked.connect(self.add_optimizer)
        self.remove_button.clicked.connect(lambda: self.remove_optimizer(self.table.currentRow()))
        self.details_button.clicked.connect(lambda: self.open_details(self.table.currentRow()))
        # A double-click on a name opens the details; a name is typed after F2 or a click on a selected cell.
        self.table.setEditTriggers(QAbstractItemView.EditKeyPressed | QAbstractItemView.SelectedClicked
                                   | QAbstractItemView.AnyKeyPressed)
        self.table.cellDoubleClicked.connect(lambda row, column: column == NAME and self.open_details(row))
        self.table.itemSelectionChanged.connect(self._selection_changed)
        self.table.itemChanged.connect(self._item_edited)
        self.sync()

    # ---- document -> view -------------------------------------------------------------------------
    def sync(self) -> None:
        project = self.document.project
        self._syncing = True
        try:
            self.table.setRowCount(1 + len(project.optimizers))
            first = project.optimizer
            self._row(0, [FIRST_OPTIMIZER, MAIN_NETWORK, "training", first.solver, f"{first.learning_rate:g}",
                          str(first.update_interval), "0", "0"], editable=False)
            for i, entry in enumerate(project.optimizers, start=1):
                o = entry.optimizer
                self._row(i, [entry.name, entry.network, entry.dataset, o.solver, f"{o.learning_rate:g}",
                              str(o.update_interval), str(entry.start_iteration), str(entry.end_iteration)])
                networks = [MAIN_NETWORK] + list(project.networks)
                self._combo(i, NETWORK, networks, entry.network, lambda e, v: setattr(e, "network", v))
                self._combo(i, DATASET, list(DATASET_SPLITS), entry.dataset, lambda e, v: setattr(e, "dataset", v))
                self._combo(i, SOLVER, list(SOLVERS), o.solver, self._set_solver)
            self.remove_button.setEnabled(bool(project.optimizers))
        finally:
            self._syncing = False
        self._selection_changed()

    def _selection_changed(self) -> None:
        self.details_button.setEnabled(1 <= self.table.currentRow() <= len(self.document.project.optimizers)
                                       and bool(self.table.selectedItems()))

    def _row(self, row: int, values: List[str], editable: bool = True) -> None:
        for column, value in enumerate(values):
            item = QTableWidgetItem(value)
            if not editable:
                item.setFlags(item.flags() & ~Qt.ItemIsEditable)
                item.setToolTip("the CONFIG tab's optimizer: edit it in the forms above")
            self.table.setItem(row, column, item)
            old = self.table.cellWidget(row, column)
            if old is not None:  # deleted later by Qt: hidden now, so it never shows over the new row
                old.hide()
                self.table.removeCellWidget(row, column)

    def _combo(self, row: int, column: int, choices: List[str], current: str,
               apply: Callable[[ExtraOptimizer, str], None]) -> None:
        combo = QComboBox()
        combo.setObjectName(f"optimizer_{row}_{COLUMNS[column].lower().replace(' ', '_')}")
        combo.addItems(choices if current in choices else choices + [current])
        combo.setCurrentText(current)
        combo.currentTextChanged.connect(lambda value, r=row: self._change(r, lambda e: apply(e, value)))
        self.table.setCellWidget(row, column, combo)

    # ---- view -> document -------------------------------------------------------------------------
    @staticmethod
    def _set_solver(entry: ExtraOptimizer, solver: str) -> None:
        o = entry.optimizer
        o.learning_rate, _ = learning_rate_on_switch(o.solver, solver, o.learning_rate)
        o.solver_params = solver_params_for(solver, o.solver_params)
        o.solver = solver

    def _change(self, row: int, edit: Callable[[ExtraOptimizer], None], what: str = "") -> str:
        """Apply ``edit`` to a copy of optimizer ``row`` and push the new list (one undo step)."""
        if self._syncing or not 1 <= row <= len(self.document.project.optimizers):
            return ""
        entries = copy.deepcopy(self.document.project.optimizers)
        try:
            edit(entries[row - 1])
        except ValueError as exc:
            self.message.emit(str(exc))
            self.sync()
            return str(exc)
        set_setting(self.document, "optimizers", entries, mergeable=False)
        self.sync()
        return ""

    def _item_edited(self, item: QTableWidgetItem) -> None:
        if self._syncing:
            return
        text, column = item.text(), item.column()
        names = {e.name for e in self.document.project.optimizers} | {FIRST_OPTIMIZER}

        def edit(entry: ExtraOptimizer) -> None:
            if column == NAME:
                if not text.strip() or (text != entry.name and text in names):
                    raise ValueError(f"optimizer name '{text}' is empty or used already")
                entry.name = text
            elif column == RATE:
                entry.optimizer.learning_rate = _rate(text)
            elif column == INTERVAL:
                entry.optimizer.update_interval = _count(text, "the update interval", 1)
            elif column == START:
                entry.start_iteration = _count(text, "the start iteration", 0)
            elif column == END:
                entry.end_iteration = _count(text, "the end iteration (0: to the end)", 0)
        self._change(item.row(), edit)

    def set_cell(self, row: int, column: int, text: str) -> str:
        """Type ``text`` into a cell (as the user does); returns why it was refused ('' when taken)."""
        refused: List[str] = []
        self.message.connect(refused.append)
        try:
            self.table.item(row, column).setText(text)
        finally:
            self.message.disconnect(refused.append)
        return refused[-1] if refused else ""

    def open_details(self, row: int) -> str:
        """Open the details dialog of optimizer ``row`` (not the first); returns why not ('' when opened)."""
        if not 1 <= row <= len(self.document.project.optimizers):
            problem = "the first optimizer is the CONFIG tab's: edit its details in the forms above"
            self.message.emit(problem)
            return problem
        name = self.document.project.optimizers[row - 1].name

        def apply(optimizer: Optimizer) -> str:
            def edit(entry: ExtraOptimizer) -> None:
                if entry.name != name:
                    raise ValueError(f"optimizer {name} is no longer in row {row}: open its details again")
                entry.optimizer = optimizer
            refused = self._change(row, edit)
            if not refused:
                self.message.emit(f"optimizer {name}: solver and schedule changed")
            return refused

        self.details_dialog = OptimizerDetailsDialog(self.document, row - 1, apply, self.window())
        self.details_dialog.open()
        return ""

    def add_optimizer(self) -> None:
        """A new optimizer with the CONFIG tab's settings, on the first other network (Main when there is none)."""
        project = self.document.project
        names = {e.name for e in project.optimizers} | {FIRST_OPTIMIZER}
        n = 2
        while f"Optimizer{n}" in names:
            n += 1
        network = next(iter(project.networks), MAIN_NETWORK)
        entry = ExtraOptimizer(name=f"Optimizer{n}", network=network, optimizer=copy.deepcopy(project.optimizer))
        set_setting(self.document, "optimizers", copy.deepcopy(project.optimizers) + [entry], mergeable=False)
        self.sync()
        self.message.emit(f"optimizer {entry.name} added: it trains network {network}")

    def remove_optimizer(self, row: int) -> str:
        if not 1 <= row <= len(self.document.project.optimizers):
            problem = "select one of the other optimizers to remove (the first is the CONFIG tab's)"
            self.message.emit(problem)
            return problem
        entries = copy.deepcopy(self.document.project.optimizers)
        removed = entries.pop(row - 1)
        set_setting(self.document, "optimizers", entries, mergeable=False)
        self.sync()
        self.message.emit(f"optimizer {removed.name} removed")
        return ""
