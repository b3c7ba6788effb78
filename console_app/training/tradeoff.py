"""The trade-off graph: each run's best validation error against its network's multiply-adds per sample.

As in NNC, the runs no other run beats on both cost and error (the Pareto front) are marked and
joined. The cost is ``status.json``'s ``total_macs`` when the engine wrote it, else
``nnconsole.engine.network.shapes.infer_network`` on the run's own ``project.yaml`` (cached per run).
"""
from __future__ import annotations

import os
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QVBoxLayout, QWidget

from nnconsole.app.widgets.plots import make_plot_widget
from nnconsole.engine.rundir.protocol import RESOLVED_FILE

_costs: Dict[str, Optional[int]] = {}


def pareto_front(points: Sequence[Tuple[float, float]]) -> List[int]:
    """Indices of the points not dominated by another (lower or equal cost and error, one strictly lower),
    sorted by cost."""
    front = []
    for i, (x, y) in enumerate(points):
        dominated = any((x2 <= x and y2 <= y) and (x2 < x or y2 < y) for j, (x2, y2) in enumerate(points) if j != i)
        if not dominated:
            front.append(i)
    return sorted(front, key=lambda i: (points[i][0], points[i][1]))


def run_cost(run_dir: str, total_macs: Optional[int] = None) -> Optional[int]:
    """Multiply-adds per sample of a run's network (None when the project cannot be read)."""
    if total_macs:
        return int(total_macs)
    key = os.path.abspath(run_dir)
    if key not in _costs:
        from nnconsole.engine.project.io import load_project
        from nnconsole.engine.network.shapes import infer_network

        try:
            project = load_project(os.path.join(key, RESOLVED_FILE))
            _costs[key] = int(infer_network(project.network).total_macs)
        except Exception:  # noqa: BLE001 - a damaged run just has no point on the graph
            _costs[key] = None
    return _costs[key]


EMPTY_RANGE = (0.0, 1.0)  # the axes of a graph without runs


class TradeoffPlot(QWidget):
    """Scatter of (multiply-adds, best validation error) per run, Pareto-optimal runs in red."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("tradeoff")
        self.plot = make_plot_widget("Trade-off: error vs. cost", "multiply-adds per sample",
                                     "best validation error", legend=True)
        self.plot.setObjectName("tradeoff_plot")
        item = self.plot.getPlotItem()
        self.others = item.plot([], [], pen=None, symbol="o", symbolSize=9, symbolBrush=pg.mkBrush("#9aa5b1"),
                                symbolPen=pg.mkPen("#5b6670"), name="run")
        self.front = item.plot([], [], pen=pg.mkPen("#d62728", width=1.5), symbol="star", symbolSize=15,
                               symbolBrush=pg.mkBrush("#d62728"), symbolPen=pg.mkPen("#8b0000"),
                               name="Pareto-optimal")
        self.labels: List[pg.TextItem] = []
        self.points: List[Tuple[float, float]] = []
        self.names: List[str] = []
        self.pareto: List[int] = []
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.plot)

    def set_runs(self, rows: Sequence, labels: Optional[Dict[str, str]] = None) -> None:
        """Rows with run_dir, label (title or name), best_error and total_macs (``history.RunRow``); ``labels``
        names some runs otherwise (a search trial: "trial 3")."""
        labels = labels or {}
        points, names = [], []
        for row in rows:
            if row.best_error is None:
                continue
            cost = run_cost(row.run_dir, row.total_macs)
            if cost is None:
                continue
            points.append((float(cost), float(row.best_error)))
            names.append(labels.get(row.run_dir, row.label))  # a trial's number, the user's title, the folder
        self.points, self.names = points, names
        self.pareto = pareto_front(points)
        item = self.plot.getPlotItem()
        for label in self.labels:
            item.removeItem(label)
        self.labels = []
        rest = [i for i in range(len(points)) if i not in self.pareto]
        self.others.setData([points[i][0] for i in rest], [points[i][1] for i in rest])
        # The front as NNC draws it: the Pareto-optimal runs joined in order of cost.
        fx, fy = [points[i][0] for i in self.pareto], [points[i][1] for i in self.pareto]
        self.front.setData(np.array(fx, dtype=float), np.array(fy, dtype=float))
        for i in self.pareto:
            label = pg.TextItem(names[i], color="#8b0000", anchor=(0, 1))
            label.setPos(points[i][0], points[i][1])
            item.addItem(label)
            self.labels.append(label)
        if points:
            xs = np.array([p[0] for p in points])
            ys = np.array([p[1] for p in points])
            span_x = max(xs.max() - xs.min(), xs.max() * 0.2, 1.0)
            span_y = max(ys.max() - ys.min(), 0.02)
            item.setXRange(xs.min() - 0.15 * span_x, xs.max() + 0.45 * span_x, padding=0)
            item.setYRange(max(0.0, ys.min() - 0.25 * span_y), ys.max() + 0.25 * span_y, padding=0)
        else:  # no run to show (another project, or none trained): not the previous project's axes
            item.setXRange(*EMPTY_RANGE, padding=0)
            item.setYRange(*EMPTY_RANGE, padding=0)
