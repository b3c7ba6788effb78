"""The CONFIG tab's Search section: the project's ``search`` section (what ``nnconsole search`` varies and for how
long), edited as the other CONFIG fields are.

Every edit is one undoable ``SetSettingCommand`` on the setting ``search`` (the whole ``model.Search``, copied
with the one field changed); edits of one field merge (``merge_key`` ``search.<field>``), so typing a number
undoes in one step. Layer properties marked searched in EDIT (NNC's Search checkbox) are listed above the
form: they are searched as if the table held them. The searched hyper-parameters are a small table (target, kind, low, high, step, choices):
a cell that does not read is shown red and not committed. ``nnconsole validate`` (the project checks) names a
bad target or range with its fix, as for every other field.
"""
from __future__ import annotations

import copy
import json
from typing import Any, List, Optional

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDoubleSpinBox, QFormLayout, QGroupBox, QHBoxLayout,
                               QHeaderView, QLabel, QPushButton, QSpinBox, QTableWidget, QTableWidgetItem, QVBoxLayout,
                               QWidget)

from nnconsole.app.config.commands import set_setting
from nnconsole.app.widgets.rich_text import bounded, esc
from nnconsole.app.widgets.search_range import range_text
from nnconsole.engine.project.model import Search, SearchParam, SearchRange
from nnconsole.engine.project.schema import SEARCH_KINDS, SEARCH_PRUNERS, SEARCH_SAMPLERS
from nnconsole.engine.project.searched_properties import flagged_properties

INT_MAX = 2_147_483_647
OBJECTIVES = {"error": ["error"], "error x multiply-adds": ["error", "multiply_adds"]}
PARAM_COLUMNS = ("Target", "Kind", "Low", "High", "Step", "Choices")
BAD_CELL = QColor("#ffd0d0")


def parse_choices(text: str) -> List[Any]:
    """``16, 32, Adam`` -> [16, 32, 'Adam']: each comma-separated entry as JSON where it reads, else as text."""
    out: List[Any] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            out.append(json.loads(part))
        except ValueError:
            out.append(part)
    return out


def param_from_cells(cells: List[str]) -> SearchParam:
    """A SearchParam from a table row's texts (target, kind, low, high, step, choices); ValueError names the cell."""
    target, kind, low, high, step, choices = (c.strip() for c in cells)
    if not target:
        raise ValueError("Target")
    if kind not in SEARCH_KINDS:
        raise ValueError("Kind")
    numbers = []
    for name, text in (("Low", low), ("High", high)):
        try:
            numbers.append(float(text or 0))
        except ValueError:
            raise ValueError(name) from None
    try:
        step_value = int(step or 1)
    except ValueError:
        raise ValueError("Step") from None
    return SearchParam(target=target, kind=kind, low=numbers[0], high=numbers[1], step=step_value,
                       choices=parse_choices(choices) if kind == "choice" else [])


def _number(x: float) -> str:
    return f"{x:g}"


class SearchSection(QGroupBox):
    """The project's ``search`` section as a form and a table of searched values; off = no section."""

    def __init__(self, document: Any, parent: Optional[QWidget] = None) -> None:
        super().__init__("Search (nnconsole search)", parent)
        self.setObjectName("search_section")
        self.document = document
        self.enabled = QCheckBox("This project has a search section", self)
        self.enabled.setObjectName("search_enabled")
        self.enabled.toggled.connect(self._toggle)
        form = QFormLayout()
        self.objectives = self._combo("objectives", list(OBJECTIVES),
                                      lambda text: self._commit("objectives", list(OBJECTIVES[text])))
        self.trials = self._spin("trials", 1, INT_MAX)
        self.timeout = self._double("timeout_minutes", 0.0, 1e7, 1)
        self.epochs = self._spin("epochs", 0, INT_MAX)
        self.structure = QCheckBox("mutate the Main network (NNC's structure search policy)", self)
        self.structure.setObjectName("search_structure")
        self.structure.toggled.connect(lambda on: self._commit("structure", bool(on)))
        self.max_mutations = self._spin("max_mutations", 1, 64)
        self.error_max = self._double("error_max", 0.0, 1e9, 4)
        self.macs_min = self._spin("multiply_adds_min", 0, INT_MAX)
        self.macs_max = self._spin("multiply_adds_max", 0, INT_MAX)
        self.pruner = self._combo("pruner", SEARCH_PRUNERS, lambda text: self._commit("pruner", text))
        self.sampler = self._combo("sampler", SEARCH_SAMPLERS, lambda text: self._commit("sampler", text))
        self.seed = self._spin("seed", 0, INT_MAX)
        for label, widget in (("Objectives", self.objectives), ("Trials (budget)", self.trials),
                              ("Time limit (minutes, 0 = none)", self.timeout),
                              ("Epochs per trial (0 = Max epoch)", self.epochs), ("Structure search", self.structure),
                              ("Changes per trial", self.max_mutations), ("Error max (0 = none)", self.error_max),
                              ("Multiply-adds min (0 = none)", self.macs_min),
                              ("Multiply-adds max (0 = none)", self.macs_max), ("Pruner", self.pruner),
                              ("Sampler", self.sampler), ("Seed", self.seed)):
            form.addRow(label, widget)
        self.params = QTableWidget(0, len(PARAM_COLUMNS), self)
        self.params.setObjectName("search_params")
        self.params.setHorizontalHeaderLabels(PARAM_COLUMNS)
        self.params.horizontalHeader().setSectionResizeMode(QHeaderView.Stretch)
        self.params.setMinimumHeight(130)
        self.params.cellChanged.connect(self._commit_params)
        add, remove = QPushButton("Add searched value", self), QPushButton("Remove", self)
        add.setObjectName("search_param_add")
        remove.setObjectName("search_param_remove")
        add.clicked.connect(self.add_param)
        remove.clicked.connect(self.remove_param)
        buttons = QHBoxLayout()
        buttons.addWidget(add)
        buttons.addWidget(remove)
        buttons.addStretch(1)
        self.body = QWidget(self)
        inner = QVBoxLayout(self.body)
        inner.setContentsMargins(0, 0, 0, 0)
        inner.addLayout(form)
        inner.addWidget(self.params)
        inner.addLayout(buttons)
        self.flagged = QLabel(self)
        self.flagged.setObjectName("search_flagged")
        self.flagged.setWordWrap(True)
        self.flagged.setTextFormat(Qt.RichText)
        layout = QVBoxLayout(self)
        layout.addWidget(self.enabled)
        layout.addWidget(self.flagged)
        layout.addWidget(self.body)
        self.sync()

    # ---- editors ------------------------------------------------------------------------------
    def _spin(self, name: str, low: int, high: int) -> QSpinBox:
        w = QSpinBox(self)
        w.setObjectName(f"search_{name}")
        w.setRange(low, high)
        w.valueChanged.connect(lambda v: self._commit(name, int(v)))
        return w

    def _double(self, name: str, low: float, high: float, decimals: int) -> QDoubleSpinBox:
        w = QDoubleSpinBox(self)
        w.setObjectName(f"search_{name}")
        w.setRange(low, high)
        w.setDecimals(decimals)
        w.valueChanged.connect(lambda v: self._commit(name, float(v)))
        return w

    def _combo(self, name: str, items, on_text) -> QComboBox:
        w = QComboBox(self)
        w.setObjectName(f"search_{name}")
        w.addItems(list(items))
        w.currentTextChanged.connect(on_text)
        return w

    # ---- view -> document ---------------------------------------------------------------------
    def search(self) -> Optional[Search]:
        return self.document.get_setting("search")

    def _toggle(self, on: bool) -> None:
        if on and self.search() is None:
            set_setting(self.document, "search", Search(), mergeable=False)
        elif not on and self.search() is not None:
            set_setting(self.document, "search", None, mergeable=False)

    def _commit(self, name: str, value: Any, merge_key: str = "", mergeable: bool = True) -> None:
        """``search.<name> = value`` as one undo step, merged with the next edit of the same ``merge_key``."""
        current = self.search()
        if current is None or getattr(current, name) == value:
            return
        changed = copy.deepcopy(current)
        setattr(changed, name, value)
        set_setting(self.document, "search", changed, mergeable, merge_key=merge_key or f"search.{name}")

    def _row_cells(self, row: int) -> List[str]:
        cells = []
        for col in range(len(PARAM_COLUMNS)):
            if col == 1:
                cells.append(self.params.cellWidget(row, col).currentText())
            else:
                item = self.params.item(row, col)
                cells.append(item.text() if item is not None else "")
        return cells

    def _commit_params(self, row: int = -1, col: int = -1) -> None:
        """The table as ``search.params``; nothing is committed while a cell does not read (it is shown red).
        Typing in one cell is one undo step."""
        params, bad = [], False
        self.params.blockSignals(True)
        try:
            for row in range(self.params.rowCount()):
                for col in (0, 2, 3, 4, 5):
                    item = self.params.item(row, col)
                    if item is not None:
                        item.setBackground(QBrush())
                try:
                    params.append(param_from_cells(self._row_cells(row)))
                except ValueError as exc:
                    bad = True
                    col = PARAM_COLUMNS.index(str(exc))
                    if col != 1 and self.params.item(row, col) is not None:
                        self.params.item(row, col).setBackground(QBrush(BAD_CELL))
        finally:
            self.params.blockSignals(False)
        if not bad:
            self._commit("params", params, merge_key=f"search.params.{row}.{col}")

    def add_param(self) -> None:
        current = self.search()
        if current is not None:
            self._commit("params", list(current.params) + [SearchParam(target="optimizer.learning_rate",
                                                                        kind="log_float", low=1e-5, high=1.0)],
                         mergeable=False)

    def remove_param(self) -> None:
        current, row = self.search(), self.params.currentRow()
        if current is not None and 0 <= row < len(current.params):
            self._commit("params", [p for i, p in enumerate(current.params) if i != row], mergeable=False)

    # ---- document -> view ---------------------------------------------------------------------
    def sync(self) -> None:
        """Show the document's search section (signals blocked: this pushes no command)."""
        self.sync_flags()
        search = self.search()
        widgets = [self.enabled, self.objectives, self.trials, self.timeout, self.epochs, self.structure,
                   self.max_mutations, self.error_max, self.macs_min, self.macs_max, self.pruner, self.sampler,
                   self.seed, self.params]
        for w in widgets:
            w.blockSignals(True)
        try:
            self.enabled.setChecked(search is not None)
            self.body.setVisible(search is not None)
            if search is None:
                return
            self.objectives.setCurrentText(next((k for k, v in OBJECTIVES.items() if v == list(search.objectives)),
                                                "error"))
            for spin, value in ((self.trials, search.trials), (self.epochs, search.epochs),
                                (self.max_mutations, search.max_mutations), (self.seed, search.seed),
                                (self.macs_min, min(search.multiply_adds_min, INT_MAX)),
                                (self.macs_max, min(search.multiply_adds_max, INT_MAX))):
                spin.setValue(int(value))
            self.timeout.setValue(float(search.timeout_minutes))
            self.error_max.setValue(float(search.error_max))
            self.structure.setChecked(bool(search.structure))
            self.pruner.setCurrentText(search.pruner)
            self.sampler.setCurrentText(search.sampler)
            self._fill_params(search.params)
        finally:
            for w in widgets:
                w.blockSignals(False)

    def sync_flags(self) -> None:
        """List the layer properties marked searched in EDIT (NNC's Search checkbox): searched as if listed here."""
        flags = flagged_properties(self.document.project)
        if not flags:
            self.flagged.setText("<span style='color:#56606b'>Layer properties searched: none (tick a property's "
                                 "Search box in EDIT's property panel to add one)</span>")
            return
        rows = [f"&nbsp;&nbsp;• <b>{esc(bounded(f.target, 200))}</b>: "
                + (esc(range_text(SearchRange(f.param.kind, f.param.low, f.param.high, f.param.step, f.param.choices)))
                   if f.param is not None else f"<span style='color:#c62828'>{esc(f.why)}</span>")
                for f in flags]
        self.flagged.setText("Layer properties searched (marked in EDIT; searched as if the section listed them):<br>"
                             + "<br>".join(rows))

    def _fill_params(self, params: List[SearchParam]) -> None:
        self.params.setRowCount(len(params))
        kinds = []
        for row, p in enumerate(params):
            texts = (p.target, "", _number(p.low), _number(p.high), str(p.step),
                     ", ".join(json.dumps(c) if not isinstance(c, str) else c for c in p.choices))
            for col, text in enumerate(texts):
                if col == 1:
                    kinds.append(self._kind_editor(row))
                    kinds[-1].setCurrentText(p.kind)
                elif self.params.item(row, col) is None:
                    self.params.setItem(row, col, QTableWidgetItem(text))
                elif self.params.item(row, col).text() != text:  # kept, not replaced: it may be the one edited
                    self.params.item(row, col).setText(text)
        for kind in kinds:
            kind.blockSignals(False)

    def _kind_editor(self, row: int) -> QComboBox:
        """The row's Kind selector, made once per row and kept (signals blocked while filled): a combo is never
        replaced from inside its own change signal."""
        kind = self.params.cellWidget(row, 1)
        if not isinstance(kind, QComboBox):
            kind = QComboBox(self.params)
            kind.addItems(list(SEARCH_KINDS))
            kind.currentTextChanged.connect(lambda _t, r=row: self._commit_params(r, 1))
            self.params.setCellWidget(row, 1, kind)
        kind.blockSignals(True)
        return kind
