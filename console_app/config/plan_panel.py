"""The live "multi-GPU plan" panel: what the engine will run for the project on N workers, and why.

Every figure comes from ``nnconsole.engine.plan.worker_plan.make_plan`` (the same call the launcher makes): per-worker and
logical batch, iterations per epoch, effective learning rate, the exact LR update interval and
multiplier, warm-up, the engine's notes and warnings. A table compares 1, 2, 4 and 8 workers (plus
the project's own N) so the user sees what N changes. The dataset size comes from the training CSV.
With ``multi_gpu.simulate_workers`` N above ``multi_gpu.workers`` M the run trains as N workers simulated on M
devices (issue 30): the plan shown and marked is N's, said to be simulated on this machine, and the prediction
adds the simulation's own time per epoch beside N real devices'.
"""
from __future__ import annotations

import html
import os
from typing import Any, List, Optional, Tuple

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QFont
from PySide6.QtWidgets import (QAbstractItemView, QComboBox, QHeaderView, QLabel, QSizePolicy, QTableWidget,
                               QTableWidgetItem, QTextBrowser, QVBoxLayout, QWidget)

from nnconsole.app.config.prediction_table import PredictionTable
from nnconsole.engine.plan.worker_plan import make_plan, simulated_count, simulation_problem
from nnconsole.engine.plan.record import Plan, PlanError
from nnconsole.engine.plan.explain import lr_interval_cell, simulation_note, warmup_cell
from nnconsole.engine.project.model import Project
from nnconsole.engine.project.schema import ALPHA_SOLVERS
from nnconsole.app.widgets import theme
from nnconsole.app.widgets.rich_text import plain_tooltip

COMPARED_WORKERS = (1, 2, 4, 8)


def _g(x: float) -> str:
    return f"{x:.6g}"


def _int(x: Optional[int]) -> str:
    return "?" if x is None else f"{x:,}"


# (row label, function of a Plan giving the cell text); the LR row label depends on the solver.
ROWS: List[Tuple[str, Any]] = [
    ("Per-worker batch", lambda p: str(p.per_worker_batch)),
    ("Logical batch", lambda p: str(p.logical_batch)),
    ("Iterations / epoch", lambda p: _int(p.iterations_per_epoch)),
    ("Total iterations", lambda p: _int(p.total_iterations)),
    ("LEARNING_RATE", lambda p: _g(p.effective_lr)),
    ("LR scale", lambda p: f"x{_g(p.lr_scale)}"),
    ("LR update interval", lr_interval_cell),  # iterations of the run, "(2 epochs)" beside when set in epochs
    ("LR multiplier", lambda p: _g(p.effective_lr_multiplier)),
    ("Warm-up iterations", warmup_cell),
]


class DatasetSizeCache:
    """Training-set row counts by (path, mtime), so typing in CONFIG never re-reads an unchanged CSV."""

    def __init__(self) -> None:
        self._cache: dict = {}

    def size(self, project: Project) -> Optional[int]:
        from nnconsole.engine.data.loading import peek_csv
        from nnconsole.engine.project.paths import dataset_path

        rel = project.datasets.training
        if not rel:
            return None
        path = dataset_path(project, rel)
        try:
            key = (path, os.stat(path).st_mtime_ns)
        except OSError:
            return None
        if key not in self._cache:
            try:
                self._cache[key] = peek_csv(path, 0).row_count
            except (OSError, ValueError):
                self._cache[key] = None
        return self._cache[key]


class PlanPanel(QWidget):
    """Summary of the current N, a comparison table for 1/2/4/8 workers, and notes and warnings."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("plan_panel")
        self.sizes = DatasetSizeCache()
        self.plans: List[Any] = []  # a Plan, or the PlanError of an N that cannot run
        self.current: Optional[Plan] = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        title = QLabel("<b>Multi-GPU plan</b> &mdash; what the engine will run, from <code>nnconsole.engine.plan.worker_plan</code>", self)
        layout.addWidget(title)
        self._project: Optional[Project] = None
        self.optimizer_choice = QComboBox(self)  # whose plan is shown: one table per optimizer (issue 17)
        self.optimizer_choice.setObjectName("plan_optimizer")
        self.optimizer_choice.setToolTip("Each optimizer is planned as the CONFIG tab's: its own learning rate "
                                         "and schedule on N workers")
        self.optimizer_choice.hide()
        self.optimizer_choice.currentIndexChanged.connect(
            lambda _i: self.refresh(self._project) if self._project is not None else None)
        layout.addWidget(self.optimizer_choice)
        theme.notifier().changed.connect(self._theme_changed)
        self.summary = QLabel(self)
        self.summary.setObjectName("plan_summary")
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.RichText)
        layout.addWidget(self.summary)
        self.error = QLabel(self)
        self.error.setObjectName("plan_error")
        self.error.setWordWrap(True)
        self.error.setStyleSheet("QLabel { color: #a00000; background: #fff0f0; border: 1px solid #e0a0a0; "
                                 "padding: 6px; }")
        self.error.hide()
        layout.addWidget(self.error)
        self.table = QTableWidget(self)
        self.table.setObjectName("plan_table")
        self.table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.table.setSelectionMode(QAbstractItemView.NoSelection)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.Stretch)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.table.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Fixed)
        layout.addWidget(self.table)
        self.prediction = PredictionTable(self)  # layout / predicted s per epoch / verdict (issue 20)
        layout.addWidget(self.prediction)
        self.notes = QTextBrowser(self)
        self.notes.setObjectName("plan_notes")
        self.notes.setOpenLinks(False)
        layout.addWidget(self.notes, 1)

    # ---- data ---------------------------------------------------------------------------------
    def planned_workers(self, project: Project) -> Tuple[int, int]:
        """(N the run plans for, the devices M that simulate them or 0): ``multi_gpu.simulate_workers`` N on
        ``multi_gpu.workers`` M when it is more than M (as the launcher decides it), else (M, 0); (M, 0) too for
        an N the launcher refuses (the panel says why above M's plan)."""
        devices = max(1, int(project.multi_gpu.workers))
        if simulation_problem(project.multi_gpu.simulate_workers, devices):
            return devices, 0
        simulated = simulated_count(project.multi_gpu.simulate_workers, devices)
        return (simulated, devices) if simulated else (devices, 0)

    def worker_counts(self, project: Project) -> List[int]:
        devices = max(1, int(project.multi_gpu.workers))
        return sorted(set(COMPARED_WORKERS) | {devices, self.planned_workers(project)[0]})

    def refresh(self, project: Project) -> None:
        """Recompute every plan from the project as it is now (cheap: pure arithmetic)."""
        project = self._chosen_optimizer(project)
        size = self.sizes.size(project)
        n, on_devices = self.planned_workers(project)
        self.plans = []
        for k in self.worker_counts(project):
            try:
                self.plans.append(make_plan(project, workers=k, dataset_size=size))
            except PlanError as exc:
                self.plans.append(exc)  # that N cannot run: its column says why
        self.current = next((p for p in self.plans if isinstance(p, Plan) and p.workers == n), None)
        if self.current is not None and on_devices:  # as the launcher marks the run's plan
            self.current.simulated = True
            self.current.notes.insert(0, simulation_note(n, on_devices))
        self._fill_table(project)
        self.prediction.refresh(project, self.worker_counts(project),
                                lambda k: make_plan(project, workers=k, dataset_size=size),
                                simulated=(n, on_devices) if on_devices else None)
        refused = simulation_problem(project.multi_gpu.simulate_workers, max(1, int(project.multi_gpu.workers)))
        if refused:  # the launcher refuses such a run: say it first
            self.error.setText(f"<b>The run would be refused:</b> {html.escape(refused)}")
            self.error.show()
        if self.current is None:
            problem = next(p for k, p in zip(self.worker_counts(project), self.plans) if k == n)
            self.error.setText(f"<b>These settings cannot run on {n} worker{'s' if n > 1 else ''}:</b> "
                               f"{html.escape(str(problem))}")
            self.error.show()
            self.summary.setText("")
            self.notes.setHtml("")
            return
        self.error.setVisible(bool(refused))
        self._show_summary(self.current, project, size, on_devices)
        self._show_notes(self.current)

    def _theme_changed(self) -> None:
        if self._project is not None:
            self.refresh(self._project)  # the marked column in the new palette's colours

    def _chosen_optimizer(self, project: Project) -> Project:
        """``project`` as the optimizer chosen above the table sees it (the CONFIG tab's unless another one)."""
        from nnconsole.engine.project.structure import FIRST_OPTIMIZER, optimizer_project

        self._project = project
        names = [FIRST_OPTIMIZER] + [e.name for e in project.optimizers]
        choice = self.optimizer_choice
        if [choice.itemText(i) for i in range(choice.count())] != names:
            current = choice.currentText()
            choice.blockSignals(True)
            choice.clear()
            choice.addItems(names)
            choice.setCurrentIndex(names.index(current) if current in names else 0)
            choice.blockSignals(False)
        choice.setVisible(len(names) > 1)
        index = choice.currentIndex()
        return optimizer_project(project, project.optimizers[index - 1]) if index > 0 else project

    def cell(self, row_label: str, workers: int) -> str:
        """The table's text for a figure and a worker count (tests and tooltips)."""
        labels = [self.table.verticalHeaderItem(r).text() for r in range(self.table.rowCount())]
        heads = [self.table.horizontalHeaderItem(c).text() for c in range(self.table.columnCount())]
        col = next(i for i, h in enumerate(heads) if h.split()[0] == f"N={workers}")
        return self.table.item(labels.index(row_label), col).text()

    # ---- views --------------------------------------------------------------------------------
    def _lr_name(self, project: Project) -> str:
        return "Alpha" if project.optimizer.solver in ALPHA_SOLVERS else "Learning rate"

    def _show_summary(self, p: Plan, project: Project, size: Optional[int], on_devices: int = 0) -> None:
        lr = self._lr_name(project)
        data = f"{size:,} training samples" if size is not None else "training set size unknown (iterations need it)"
        simulated = (f" <b>simulated on this machine's {on_devices} device{'s' if on_devices > 1 else ''}</b> "
                     f"(Simulate workers; {p.workers // on_devices} per device, one after another: the parameters "
                     f"of {p.workers} real workers, not their time)" if on_devices else "")
        self.summary.setText(
            f"<b>N = {p.workers}</b> worker{'s' if p.workers > 1 else ''}{simulated}, scaling <b>{p.policy}</b>: "
            f"per-worker batch <b>{p.per_worker_batch}</b>, logical batch <b>{p.logical_batch}</b>, "
            f"{lr.lower()} <b>{_g(p.base_lr)} &rarr; {_g(p.effective_lr)}</b>, "
            f"<b>{_int(p.iterations_per_epoch)}</b> iterations/epoch ({data}).")

    def _fill_table(self, project: Project) -> None:
        n, on_devices = self.planned_workers(project)
        self.table.clear()
        self.table.setRowCount(len(ROWS))
        self.table.setColumnCount(len(self.plans))
        bold = QFont()
        bold.setBold(True)
        colors = theme.colors()
        for c, (k, plan) in enumerate(zip(self.worker_counts(project), self.plans)):
            head = QTableWidgetItem(f"N={k}" + ((" (simulated)" if on_devices else " (project)") if k == n else ""))
            if k == n:
                head.setFont(bold)
            self.table.setHorizontalHeaderItem(c, head)
            for r, (label, fn) in enumerate(ROWS):
                if isinstance(plan, Plan):
                    item = QTableWidgetItem(fn(plan))
                    if plan.warnings:
                        item.setToolTip(plain_tooltip("\n".join(w.message for w in plan.warnings)))
                else:
                    item = QTableWidgetItem("\u2014")
                    item.setToolTip(plain_tooltip(str(plan)))
                    item.setForeground(QBrush(colors.error_text))
                item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                if k == n:  # the project's column, marked in the palette's colours (readable on dark too)
                    item.setBackground(QBrush(colors.current))
                    item.setForeground(QBrush(colors.text))
                    item.setFont(bold)
                self.table.setItem(r, c, item)
        for r, (label, _) in enumerate(ROWS):
            self.table.setVerticalHeaderItem(r, QTableWidgetItem(self._lr_name(project) if label == "LEARNING_RATE"
                                                                 else label))
        height = self.table.horizontalHeader().height() + 2 * self.table.frameWidth()
        height += sum(self.table.rowHeight(r) for r in range(self.table.rowCount()))
        self.table.setFixedHeight(height + 2)

    def _show_notes(self, p: Plan) -> None:
        parts = []
        for w in p.warnings:
            parts.append(f"<p style='color:#9a5b00'><b>&#9888; Warning [{html.escape(w.code)}]</b> "
                         f"{html.escape(w.message)}<br><i>Fix:</i> {html.escape(w.fix)}</p>")
        if p.notes:
            parts.append("<ul style='margin-left:-20px'>" + "".join(f"<li>{html.escape(n)}</li>" for n in p.notes)
                         + "</ul>")
        self.notes.setHtml(f"<p><b>Notes for N = {p.workers}</b></p>" + "".join(parts))
