"""The CONFIG plan panel's prediction: layout / predicted seconds per epoch / verdict (issue 20).

Every figure comes from ``nnconsole.engine.plan.timing_inputs.predict_project`` (what ``nnconsole plan --hosts``
prints): the project's hosts (``multi_gpu.hosts``, host:slots) give the layouts, else the compared worker counts
on one host; the link between hosts is the project's ``multi_gpu.link`` (gigabit Ethernet when empty); the compute
time and the all-reduce among a host's workers are those the project's runs on this machine measured (the
assumptions name the runs), "unknown until one run" before any. A layout that more machines make slower is shown in the warning
colour, and the assumptions (where the link came from, unknown compute) below; a link or host entry that cannot be
read is said there instead of a table (the message ``nnconsole validate`` gives).
"""
from __future__ import annotations

from typing import Callable, List, Optional, Sequence, Tuple

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (QAbstractItemView, QHeaderView, QLabel, QSizePolicy, QTableWidget, QTableWidgetItem,
                               QVBoxLayout, QWidget)

from nnconsole.engine.errors import NnconsoleError
from nnconsole.engine.plan.timing import Estimate, simulated_estimate
from nnconsole.engine.plan.timing_inputs import (UNKNOWN_UNTIL_RUN, describe_link, layout_label, layouts_for,
                                                 predict_project)
from nnconsole.engine.project.model import Project

HEADERS = ("Layout", "Predicted s / epoch", "Verdict")
SLOWER_BRUSH = QBrush(QColor("#9a5b00"))


def simulation_estimate(estimates: Sequence[Estimate], workers: int, devices: int,
                        plan_for_workers: Callable) -> Optional[Estimate]:
    """The epoch time of ``workers`` simulated on ``devices`` of this machine (from the one-host layout of that
    many devices), its verdict beside the time of as many real devices; None without that layout."""
    real = next((e for e in estimates if e.hosts == 1 and e.workers == devices), None)
    if real is None:
        return None
    plan_n, plan_m = plan_for_workers(workers), plan_for_workers(devices)
    sim = simulated_estimate(real, workers, plan_n.iterations_per_epoch,
                             plan_n.per_worker_batch / plan_m.per_worker_batch)
    real_n = next((e for e in estimates if e.hosts == 1 and e.workers == workers), None)
    if not sim.compute_known:
        sim.note = "simulated here: compute time unknown"
    elif real_n is not None and real_n.epoch_s:
        sim.note = f"simulated here: {sim.epoch_s / real_n.epoch_s:.2f}x the time of {workers} real devices"
    else:
        sim.note = "simulated here"
    return sim


class PredictionTable(QWidget):
    """A small table of the predicted time per epoch of each layout, and what it assumed."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("plan_prediction")
        self.predictions: List[Estimate] = []
        self.simulation: Optional[Estimate] = None  # the simulated run's own row (multi_gpu.simulate_workers)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.addWidget(QLabel("<b>Predicted time per epoch</b> &mdash; ring all-reduce within and between hosts "
                                "(<code>nnconsole plan --hosts</code>)", self))
        self.table = QTableWidget(0, len(HEADERS), self)
        self.table.setObjectName("prediction_table")
        self.table.setHorizontalHeaderLabels(list(HEADERS))
        self.table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.table.setSelectionMode(QAbstractItemView.NoSelection)
        self.table.verticalHeader().hide()
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.Stretch)
        self.table.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Fixed)
        layout.addWidget(self.table)
        self.assumptions = QLabel(self)
        self.assumptions.setObjectName("prediction_assumptions")
        self.assumptions.setWordWrap(True)
        self.assumptions.setTextFormat(Qt.PlainText)
        self.assumptions.setStyleSheet("QLabel { color: #555; }")
        layout.addWidget(self.assumptions)

    def refresh(self, project: Project, worker_counts: Sequence[int], plan_for_workers: Callable,
                simulated: Optional[Tuple[int, int]] = None) -> None:
        """Predict the project's layouts; a plan or host problem is said in place of the table. ``simulated``:
        (N, M) when the run simulates N workers on M devices, predicted in a row of its own after the layouts."""
        self.simulation = None
        try:
            hosts = list(project.multi_gpu.hosts or [])
            result = predict_project(project, layouts_for(hosts, [] if hosts else worker_counts), plan_for_workers)
            if simulated is not None:
                self.simulation = simulation_estimate(result.estimates, *simulated, plan_for_workers)
        except (NnconsoleError, ValueError, KeyError) as exc:  # a plan that cannot run, a bad host entry
            self.predictions = []
            self.table.setRowCount(0)
            self.assumptions.setText(f"No prediction: {exc}")
            return
        self.predictions = result.estimates
        rows = self.predictions + ([self.simulation] if self.simulation is not None else [])
        self.table.setRowCount(len(rows))
        for row, p in enumerate(rows):
            label = (f"{simulated[0]} simulated on {layout_label(p)}" if p is self.simulation and simulated
                     else layout_label(p))
            cells = (label, f"{p.epoch_s:.3g}" if p.compute_known else UNKNOWN_UNTIL_RUN, p.note)
            compute = f"compute {p.compute_s * 1e3:.3g} ms" if p.compute_known else f"compute {UNKNOWN_UNTIL_RUN}"
            tip = (f"all-reduce {p.allreduce_s * 1e3:.3g} ms + {compute} per iteration"
                   + (f" ({p.allreduce_share * 100:.0f}% communication)" if p.compute_known else "")
                   + f", {p.iterations} iterations per epoch; between hosts {describe_link(result.network)}"
                   + (f"\n{p.basis}" if p.basis else ""))
            if p is self.simulation:
                tip = (f"{simulated[0]} workers' micro-batches computed one after another on {simulated[1]} "
                       f"device(s), then their all-reduce: {tip}")
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(tip)
                if col == 1:
                    item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                if p.note.startswith("slower"):
                    item.setForeground(SLOWER_BRUSH)
                self.table.setItem(row, col, item)
        height = self.table.horizontalHeader().height() + 2 * self.table.frameWidth()
        self.table.setFixedHeight(height + sum(self.table.rowHeight(r) for r in range(len(rows))) + 2)
        hint = [] if project.multi_gpu.hosts else ["set Hosts (host:slots) to compare machines"]
        self.assumptions.setText("\n".join(result.header().splitlines() + hint))

    def row_texts(self) -> List[Tuple[str, ...]]:
        """Every row's (layout, s / epoch, verdict) as shown (tests)."""
        return [tuple(self.table.item(r, c).text() for c in range(self.table.columnCount()))
                for r in range(self.table.rowCount())]

    def verdict(self, label: str) -> str:
        """The verdict shown for a layout label such as '2 hosts x 2' (tests)."""
        row = next(r for r in range(self.table.rowCount()) if self.table.item(r, 0).text() == label)
        return self.table.item(row, 2).text()
