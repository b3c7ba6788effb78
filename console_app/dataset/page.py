"""The DATASET tab: training and validation CSV paths, their previews, and the network's variables matched.

Paths are undoable edits of the document's Datasets fields. Opening a CSV shows its first rows at
once (``nnconsole.engine.data.loading.peek_csv``: no image decoded); the full check, ``nnconsole.engine.data.loading.load_dataset`` with
the shapes the network's Input layers expect, runs on a background thread and fills in the class
histogram (``nnconsole.engine.data.loading.class_histogram``) and the loaded shapes, or the engine's error with file,
line and fix. Header problems come from ``nnconsole.engine.check.validate.check_datasets``, before any run.
The cache's disk budget is edited below the cache option (``cache_budget``), with what the loaded datasets'
decoded images take against it; the background load keeps to that budget, as a run does.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QBrush
from PySide6.QtWidgets import (QAbstractItemView, QFileDialog, QGridLayout, QGroupBox, QHBoxLayout, QHeaderView,
                               QLabel, QLineEdit, QListWidget, QListWidgetItem, QPushButton, QSplitter,
                               QTableWidget, QTableWidgetItem, QTabWidget, QVBoxLayout, QWidget)

from nnconsole.app.config.commands import set_setting, set_settings
from nnconsole.app.widgets import theme
from nnconsole.app.config.fields import FieldEditor, spec_for
from nnconsole.app.dataset.background import BackgroundCall
from nnconsole.app.dataset.cache_budget import BUDGET, CacheBudgetBox, CacheNeed, cache_need
from nnconsole.app.dataset.matching import ExpectedVariable, expected_variables, shape_text, variable_status
from nnconsole.app.dataset.preview import PREVIEW_ROWS, DatasetPreview
from nnconsole.engine.data.loading import DatasetError, class_histogram, load_dataset, peek_csv
from nnconsole.engine.data.labels import class_label_variables, project_class_names
from nnconsole.engine.project.schema import form_settings
from nnconsole.engine.check.validate import check_datasets
from nnconsole.engine.project.paths import dataset_path

SPLITS = ("training", "validation")


def choose_dataset_file(parent: Optional[QWidget], start: str) -> str:
    """Ask for a dataset CSV (a helper so tests can replace the dialog); '' when cancelled."""
    path, _ = QFileDialog.getOpenFileName(parent, "Choose a dataset CSV", start,
                                          "NNC dataset CSV (*.csv);;All files (*)")
    return path


def relative_to_project(project_path: Optional[str], chosen: str) -> str:
    """A path as stored in the project: relative when the file is inside the project folder."""
    if not project_path:
        return os.path.abspath(chosen)
    folder = os.path.dirname(os.path.abspath(project_path))
    full = os.path.abspath(chosen)
    if os.path.commonpath([folder, full]) == folder:
        return os.path.relpath(full, folder)
    return full


@dataclass
class SplitState:
    """What the tab knows about one CSV: its resolved path, header, loaded shapes or error."""

    path: str = ""
    header: Optional[List[str]] = None
    loaded: Optional[Dict[str, tuple]] = None
    error: str = ""
    error_variable: Optional[str] = None  # the variable the load error is about (None: the whole file)
    token: int = 0
    need: Optional[CacheNeed] = None  # what its decoded images take in the cache (None: no images, not loaded)


class DatasetPage(QWidget):
    """Dataset paths, the variables table, the problems list and one preview per CSV."""

    def __init__(self, document: Any, window: Any = None, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("dataset_page")
        self.document = document
        self.window_ = window
        self.states: Dict[str, SplitState] = {s: SplitState() for s in SPLITS}
        self.expected: List[ExpectedVariable] = []
        self.create_dialog: Optional[QWidget] = None  # the last "Create dataset..." dialog
        # No Qt parent: the loader lives until its threads end, even if this page is deleted first.
        self.loader = BackgroundCall()
        self.loader.finished.connect(self._loaded)
        self._token_split: Dict[int, str] = {}
        self._refresh_timer = QTimer(self)
        self._refresh_timer.setSingleShot(True)
        self._refresh_timer.setInterval(300)
        self._refresh_timer.timeout.connect(self.refresh)

        self.path_edits: Dict[str, QLineEdit] = {}
        files = QGroupBox("Dataset files (NNC CSV format; paths relative to the project file)")
        grid = QGridLayout(files)
        for row, split in enumerate(SPLITS):
            edit = QLineEdit()
            edit.setObjectName(f"dataset_path_{split}")
            edit.setPlaceholderText("data/train.csv" if split == "training" else "data/validation.csv")
            edit.editingFinished.connect(lambda s=split: self._path_edited(s))
            browse = QPushButton("Browse...")
            browse.setObjectName(f"dataset_browse_{split}")
            browse.clicked.connect(lambda _=False, s=split: self._browse(s))
            grid.addWidget(QLabel(f"{split.capitalize()} CSV"), row, 0)
            grid.addWidget(edit, row, 1)
            grid.addWidget(browse, row, 2)
            self.path_edits[split] = edit
        options = QHBoxLayout()
        self.option_editors = []
        for setting in (s for s in form_settings("dataset") if s.kind == "bool"):  # label, tooltip: the schema's
            editor = FieldEditor(document, spec_for(setting))
            editor.widget.setText(setting.label)
            options.addWidget(editor.widget)
            self.option_editors.append(editor)
        options.addStretch(1)
        create = QPushButton("Create dataset...")  # NNC's create dataset: nnconsole dataset create
        create.setObjectName("dataset_create")
        create.clicked.connect(self.open_create_dialog)
        options.addWidget(create)
        grid.addLayout(options, 2, 1, 1, 2)
        self.budget_box = CacheBudgetBox(document)  # the cache's disk budget and what the datasets need of it
        grid.addWidget(self.budget_box, 3, 1, 1, 2)

        self.variables = QTableWidget(0, 5)
        theme.notifier().changed.connect(self._theme_changed)
        self.variables.setObjectName("dataset_variables")
        self.variables.setHorizontalHeaderLabels(["Variable", "Role", "Network shape", "Training CSV",
                                                  "Validation CSV"])
        self.variables.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.variables.horizontalHeader().setSectionResizeMode(QHeaderView.Stretch)
        self.variables.verticalHeader().hide()
        self.problems = QListWidget()
        self.problems.setObjectName("dataset_problems")
        self.problems.setWordWrap(True)
        self.problems.setStyleSheet("QListWidget { color: #a00000; }")
        checks = QGroupBox("Variables the network expects, matched against the CSV headers")
        check_layout = QHBoxLayout(checks)
        check_layout.addWidget(self.variables, 3)
        problem_box = QVBoxLayout()
        self.problems_title = QLabel("<b>Problems</b>")
        problem_box.addWidget(self.problems_title)
        problem_box.addWidget(self.problems)
        check_layout.addLayout(problem_box, 2)

        self.previews = {s: DatasetPreview(s) for s in SPLITS}
        self.preview_tabs = QTabWidget()
        self.preview_tabs.setObjectName("dataset_previews")
        for split in SPLITS:
            self.preview_tabs.addTab(self.previews[split], f"{split.capitalize()} preview")

        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addWidget(files)
        top_layout.addWidget(checks)
        splitter = QSplitter(Qt.Vertical)
        splitter.addWidget(top)
        splitter.addWidget(self.preview_tabs)
        splitter.setSizes([290, 610])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(splitter)

        document.settings_changed.connect(self._setting_changed)
        document.reloaded.connect(self.refresh)  # a different project
        document.path_changed.connect(lambda _p: self.refresh())  # saved elsewhere: paths resolve anew
        document.network_changed.connect(self._refresh_timer.start)
        self.refresh()

    # ---- document -> view ---------------------------------------------------------------------
    def _theme_changed(self) -> None:
        """The marked cells in the new palette's colours."""
        self._show_problems()
        self._fill_variables()

    def _setting_changed(self, dotted: str) -> None:
        if dotted == BUDGET:  # the loads' needs stand; only the line against the budget changes
            self.budget_box.sync()
        elif dotted.startswith("datasets"):
            for editor in self.option_editors:
                editor.sync()
            self.budget_box.sync()
            self.refresh()

    def refresh(self) -> None:
        """Re-read headers and previews now and start the full checks in the background."""
        self._refresh_timer.stop()  # this is the refresh a pending network change asked for
        project = self.document.project
        try:
            self.expected = expected_variables(project)
        except Exception:  # noqa: BLE001 - a broken network must not break this tab
            self.expected = []
        for split in SPLITS:
            self._refresh_split(split)
        self._show_problems()
        self._fill_variables()
        self._show_budget()

    def _refresh_split(self, split: str) -> None:
        project = self.document.project
        rel = getattr(project.datasets, split)
        edit = self.path_edits[split]
        if edit.text() != rel:
            edit.setText(rel)
        state = self.states[split] = SplitState()
        preview = self.previews[split]
        preview.show_histogram({}, "")  # the previous CSV's (or project's) classes until this one loads
        if not rel:
            state.error = f"No {split} dataset: choose a CSV file."
            preview.clear(state.error)
            return
        state.path = dataset_path(project, rel)
        try:
            peek = peek_csv(state.path, PREVIEW_ROWS)
        except DatasetError as exc:
            state.error = str(exc)
            preview.clear("")
            preview.show_error(state.error)
            return
        state.header = list(peek.variables)
        preview.show_preview(peek)
        preview.show_error("")
        shapes = {v.variable: v.shape for v in self.expected if v.shape}
        ds = project.datasets
        # the run's budget: the preview's load must not write a pixel cache the run would not (issue 31)
        load = functools.partial(load_dataset, label_classes=_label_classes(project), cache_budget=ds.cache_budget)
        state.token = self.loader.start(load, state.path, shapes, ds.normalize, ds.cache)
        self._token_split[state.token] = split

    def _loaded(self, token: int, dataset: Any, error: Optional[BaseException]) -> None:
        split = self._token_split.pop(token, None)
        if split is None or self.states[split].token != token:
            return  # an older request; a newer one is on its way
        state = self.states[split]
        preview = self.previews[split]
        if error is not None:
            state.error = str(error)
            state.error_variable = getattr(error, "variable", None)
            preview.show_error(state.error if isinstance(error, DatasetError)
                               else f"{state.path}: {type(error).__name__}: {error}")
        else:
            state.loaded = dict(dataset.shapes)
            state.need = cache_need(dataset)
            kinds = dict(dataset.kinds)
            self._show_histogram(split, dataset)
            try:
                preview.show_preview(peek_csv(state.path, PREVIEW_ROWS), kinds)
            except DatasetError:
                pass
        self._show_problems()
        self._fill_variables()
        self._show_budget()

    def _show_budget(self) -> None:
        """The loaded datasets' decoded sizes against the cache's disk budget."""
        self.budget_box.show_needs({s: self.states[s].need for s in SPLITS},
                                   {s: self.states[s].path for s in SPLITS})

    def _show_histogram(self, split: str, dataset: Any) -> None:
        from nnconsole.engine.metrics.results import EvaluationError, target_variable
        from nnconsole.engine.layers import get_spec

        preview = self.previews[split]
        try:
            loss_type, variable = target_variable(self.document.project)
        except (EvaluationError, KeyError, IndexError):
            preview.show_histogram({}, "")
            return
        if variable not in dataset.arrays:
            preview.show_histogram({}, variable)
            return
        if get_spec(loss_type).task == "classification":
            try:
                preview.show_histogram(class_histogram(dataset, variable), variable,
                                       project_class_names(self.document.project))
                return
            except ValueError:
                pass
        preview.show_value_histogram(dataset.arrays[variable], variable)

    def _show_problems(self) -> None:
        self.problems.clear()
        lines: List[str] = []
        for p in check_datasets(self.document.project):
            lines.append(f"{p.path}: {p.message}" + (f" \u2014 fix: {p.fix}" if p.fix else ""))
        for split in SPLITS:
            error = self.states[split].error
            if error and not any(error in line for line in lines) and self.states[split].header is not None:
                lines.append(f"datasets.{split}: {error}")
        for line in lines:
            item = QListWidgetItem("\u2716 " + line)
            self.problems.addItem(item)
        if not lines:
            item = QListWidgetItem("\u2714 No problems found: the datasets match the network.")
            item.setForeground(QBrush(theme.colors().ok_text))
            self.problems.addItem(item)
        self.problems_title.setText(f"<b>Problems ({len(lines)})</b>")

    def problem_texts(self) -> List[str]:
        """The problems currently listed (empty when everything matches)."""
        texts = [self.problems.item(i).text() for i in range(self.problems.count())]
        return [t[2:] for t in texts if t.startswith("\u2716")]

    def _fill_variables(self) -> None:
        table = self.variables
        table.setRowCount(len(self.expected))
        colors = theme.colors()
        for r, var in enumerate(self.expected):
            cells = [var.variable, var.role, shape_text(var.shape) if var.shape else "?"]
            for c, text in enumerate(cells):
                table.setItem(r, c, QTableWidgetItem(text))
            for c, split in enumerate(SPLITS, start=3):
                state = self.states[split]
                ok, text = variable_status(var, state.header, state.loaded, state.error, state.error_variable)
                item = QTableWidgetItem(("\u2714 " if ok else "\u2716 ") + text)
                item.setBackground(QBrush(colors.ok if ok else colors.bad))  # the palette's, readable on dark
                item.setForeground(QBrush(colors.text))
                table.setItem(r, c, item)

    # ---- view -> document ---------------------------------------------------------------------
    def _path_edited(self, split: str) -> None:
        text = self.path_edits[split].text().strip()
        set_setting(self.document, f"datasets.{split}", text, mergeable=False)

    def _browse(self, split: str) -> None:
        project = self.document.project
        current = self.states[split].path
        start = os.path.dirname(current) if current else os.path.dirname(project.path or os.getcwd())
        chosen = choose_dataset_file(self.window_ if isinstance(self.window_, QWidget) else self, start)
        if chosen:
            set_setting(self.document, f"datasets.{split}", relative_to_project(project.path, chosen),
                        mergeable=False)

    def open_create_dialog(self) -> None:
        """The "Create dataset..." dialog; the CSVs it makes become the project's datasets when asked."""
        from nnconsole.app.dataset.create_dialog import CreateDatasetDialog

        project = self.document.project
        folder = os.path.dirname(os.path.abspath(project.path)) if project.path else os.getcwd()
        image = next((v.shape for v in self.expected if v.role == "input" and len(v.shape) == 3
                      and v.shape[0] in (1, 3)), None)
        self.create_dialog = CreateDatasetDialog(self, folder, tuple(image) if image else None)
        self.create_dialog.created.connect(self._use_created)
        self.create_dialog.open()

    def _use_created(self, training: str, validation: str) -> None:
        path = self.document.project.path
        values = {"datasets.training": relative_to_project(path, training)}
        if validation:
            values["datasets.validation"] = relative_to_project(path, validation)
        set_settings(self.document, values, "Use the created dataset")

    def wait_for_checks(self, timeout: float = 30.0) -> None:
        """Join the background loads (tests and screenshots)."""
        self.loader.wait(timeout)


def create_page(document: Any, window: Any = None) -> QWidget:
    """Entry point used by the main window: the DATASET tab for ``document``."""
    return DatasetPage(document, window)


def _label_classes(project: Any) -> Dict[str, int]:
    """Class counts of the label variables, so the preview checks labels as training will (none while the
    network being edited is not yet complete enough to say)."""
    try:
        return class_label_variables(project.network)
    except Exception:  # a half-built network: the EDIT tab reports it; the preview checks shapes only
        return {}
