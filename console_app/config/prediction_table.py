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

from typing import Callable, List, Optional, Sequence

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (QAbstractItemView, QHeaderView, QLabel, QSizePolicy, QTableWidget, QTableWidgetItem,
                               QVBoxLayout, QWidget)

from nnconsole.engine.errors import NnconsoleError
from nnconsole.engine.plan.timing import Estimate
from nnconsole.engine.plan.timing_inputs import (UNKNOWN_UNTIL_RUN, describe_link, layout_label, layouts_for,
                                                 predict_project)
from nnconsole.engine.project.model import Project

HEADERS = ("Layout", "Predicted s / epoch", "Verdict")
SLOWER_BRUSH = QBrush(QColor("#9a5b00"))


class PredictionTable(QWidget):
    """A small table of the predicted time per epoch of each layout, and what it assumed."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("plan_prediction")
        self.predictions: List[Estimate] = []
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

    def refresh(self, project: Project, worker_counts: Sequence[int], plan_for_workers: Callable) -> None:
        """Predict the project's layouts; a plan or host problem is said in place of the table."""
        try:
            hosts = list(project.multi_gpu.hosts or [])
            result = predict_project(project, layouts_for(hosts, [] if hosts else worker_counts), plan_for_workers)
        except (NnconsoleError, ValueError, KeyError) as exc:  # a plan that cannot run, a bad host entry
            self.predictions = []
            self.table.setRowCount(0)
            self.assumptions.setText(f"No prediction: {exc}")
            return
        self.predictions = result.estimates
        self.table.setRowCount(len(self.predictions))
        for row, p in enumerate(self.predictions):
            cells = (layout_label(p), f"{p.epoch_s:.3g}" if p.compute_known else UNKNOWN_UNTIL_RUN, p.note)
            compute = f"compute {p.compute_s * 1e3:.3g} ms" if p.compute_known else f"compute {UNKNOWN_UNTIL_RUN}"
            tip = (f"all-reduce {p.allreduce_s * 1e3:.3g} ms + {compute} per iteration"
                   + (f" ({p.allreduce_share * 100:.0f}% communication)" if p.compute_known else "")
                   + f", {p.iterations} iterations per epoch; between hosts {describe_link(result.network)}"
                   + (f"\n{p.basis}" if p.basis else ""))
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(tip)
                if col == 1:
                    item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                if p.note.startswith("slower"):
                    item.setForeground(SLOWER_BRUSH)
                self.table.setItem(row, col, item)
        height = self.table.horizontalHeader().height() + 2 * self.table.frameWidth()
        self.table.setFixedHeight(height + sum(self.table.rowHeight(r) for r in range(len(self.predictions))) + 2)
        hint = [] if project.multi_gpu.hosts else ["set Hosts (host:slots) to compare machines"]
        self.assumptions.setText("\n".join(result.header().splitlines() + hint))

    def verdict(self, label: str) -> str:
        """The verdict shown for a layout label such as '2 hosts x 2' (tests)."""
        row = next(r for r in range(self.table.rowCount()) if self.table.item(r, 0).text() == label)
        return self.table.item(row, 2).text()
