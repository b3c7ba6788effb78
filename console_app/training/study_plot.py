"""The large-batch study's graphs: validation error against logical batch, and predicted time per epoch.

The top graph has one line per learning-rate policy and warm-up (``linear``, ``linear + 2-epoch warm-up``...)
through the points that have an error, each point's marker saying its state (filled: complete, hollow:
running, x: failed, square: stopped), the recommended point ringed, and the tolerance line (one worker's best
error plus the study's tolerance). The x axis is the logical batch on a log2 scale (one tick per batch the
study trains). Below, sharing the x axis, the time per epoch of each worker count: the predictor's on the
user's hardware, and what the points' runs measured (a simulated run's time is this machine's, not N devices').
Everything comes from ``study.json`` (``nnconsole.engine.rundir.batch_study``).
"""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence, Tuple

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QVBoxLayout, QWidget

from nnconsole.app.widgets.plots import color, make_plot_widget
from nnconsole.engine.rundir.batch_study import POLICIES, BatchStudy, Recommendation, StudyPoint
from nnconsole.engine.rundir.protocol import TrialStatus

# A point's state is its trial's word (rundir.protocol.TrialStatus), or "queued" before its run starts.
COMPLETE, RUNNING, FAILED, STOPPED = (TrialStatus.COMPLETE.value, TrialStatus.RUNNING.value,
                                      TrialStatus.FAILED.value, TrialStatus.STOPPED.value)
# Marker of each point state (pyqtgraph symbols) and whether it is filled.
STATE_SYMBOLS: Dict[str, Tuple[str, bool]] = {COMPLETE: ("o", True), RUNNING: ("o", False), FAILED: ("x", True),
                                              STOPPED: ("s", False), "queued": ("o", False)}
PREDICTED_COLOR = "#555555"
MEASURED_COLOR = "#ff7f0e"
TOLERANCE_COLOR = "#9a5b00"


def series_key(point: StudyPoint) -> Tuple[str, float]:
    """The line a point belongs to: its policy and warm-up."""
    return point.policy, float(point.warmup_epochs)


def series_label(policy: str, warmup_epochs: float) -> str:
    """``linear``, ``linear + 2-epoch warm-up``: a line's name in the legend."""
    return policy + (f" + {warmup_epochs:g}-epoch warm-up" if warmup_epochs > 0 else "")


def study_series(points: Sequence[StudyPoint]) -> List[Tuple[Tuple[str, float], List[StudyPoint]]]:
    """The points that have an error, grouped by line and sorted by logical batch; lines in policy order,
    then by warm-up."""
    lines: Dict[Tuple[str, float], List[StudyPoint]] = {}
    for p in points:
        if p.validation_error is not None and p.logical_batch > 0:
            lines.setdefault(series_key(p), []).append(p)
    order = sorted(lines, key=lambda k: (POLICIES.index(k[0]) if k[0] in POLICIES else 99, k[1]))
    return [(k, sorted(lines[k], key=lambda p: p.logical_batch)) for k in order]


def epoch_times(points: Sequence[StudyPoint]) -> List[Tuple[int, int, Optional[float], Optional[float]]]:
    """(workers, logical batch, predicted s/epoch, mean measured s/epoch) of each worker count, by workers."""
    rows = []
    for workers in sorted({p.workers for p in points}):
        same = [p for p in points if p.workers == workers]
        batch = next((p.logical_batch for p in same if p.logical_batch > 0), 0)
        predicted = next((p.predicted_epoch_seconds for p in same if p.predicted_epoch_seconds is not None), None)
        measured = [p.measured_epoch_seconds for p in same if p.measured_epoch_seconds is not None]
        rows.append((workers, batch, predicted, sum(measured) / len(measured) if measured else None))
    return rows


def _x(batch: int) -> float:
    return math.log2(batch)


class StudyPlot(QWidget):
    """Error against logical batch per policy, and time per epoch per worker count, for one study."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("study_plot")
        self.errors = make_plot_widget("Validation error vs. logical batch", "logical batch (log2 scale)",
                                       "validation error", legend=True)
        self.errors.setObjectName("study_error_plot")
        self.times = make_plot_widget("", "workers", "s / epoch", legend=True)
        self.times.setObjectName("study_time_plot")
        self.times.setXLink(self.errors)
        self.times.setMaximumHeight(170)
        # the error legend top left (the error grows to the right), the time legend top right (it falls)
        self.errors.getPlotItem().legend.setOffset((70, 8))
        self.lines: Dict[Tuple[str, float], pg.PlotDataItem] = {}
        self.markers: Dict[Tuple[str, float], pg.ScatterPlotItem] = {}
        self.tolerance_line: Optional[pg.InfiniteLine] = None
        self.recommended: Optional[pg.ScatterPlotItem] = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.errors, 3)
        layout.addWidget(self.times, 1)

    def set_study(self, study: Optional[BatchStudy], recommendation: Optional[Recommendation] = None) -> None:
        """Draw ``study`` (None: empty graphs) with ``recommendation`` ringed."""
        item, time_item = self.errors.getPlotItem(), self.times.getPlotItem()
        item.clear()
        time_item.clear()
        for plot in (item, time_item):
            if plot.legend is not None:
                plot.legend.clear()
        self.lines, self.markers, self.tolerance_line, self.recommended = {}, {}, None, None
        points = list(study.points) if study is not None else []
        for i, (key, line) in enumerate(study_series(points)):
            hue = color(i)
            xs = [_x(p.logical_batch) for p in line]
            ys = [float(p.validation_error) for p in line]
            self.lines[key] = item.plot(xs, ys, pen=pg.mkPen(hue, width=2), name=series_label(*key))
            spots = []
            for p, x, y in zip(line, xs, ys):
                symbol, filled = STATE_SYMBOLS.get(p.state, ("o", False))
                spots.append({"pos": (x, y), "symbol": symbol, "size": 11, "pen": pg.mkPen(hue, width=1.6),
                              "brush": pg.mkBrush(hue) if filled else pg.mkBrush(255, 255, 255, 230),
                              "data": p.key})
            self.markers[key] = pg.ScatterPlotItem(spots=spots)
            item.addItem(self.markers[key])
        for state in (COMPLETE, RUNNING, FAILED) if self.lines else ():  # the markers' key, in the legend
            symbol, filled = STATE_SYMBOLS[state]
            brush, pen = pg.mkBrush("#5b6670" if filled else "#ffffff"), pg.mkPen("#5b6670", width=1.6)
            key = item.plot([], [], pen=None, symbol=symbol, symbolSize=10, symbolPen=pen, symbolBrush=brush,
                            name=state)
            key.scatter.setBrush(brush)  # the legend draws the scatter's own brush and pen (plots.fast_curve)
            key.scatter.setPen(pen)
        if recommendation is not None:
            limit = recommendation.baseline_error + recommendation.tolerance
            self.tolerance_line = pg.InfiniteLine(
                pos=limit, angle=0, pen=pg.mkPen(TOLERANCE_COLOR, width=1, style=Qt.DashLine),
                label=f"1 worker + {recommendation.tolerance * 100:g} point", labelOpts={"color": TOLERANCE_COLOR,
                                                                                       "position": 0.1})
            item.addItem(self.tolerance_line)
            self.recommended = pg.ScatterPlotItem(
                [_x(recommendation.logical_batch)], [recommendation.validation_error], symbol="o", size=22,
                pen=pg.mkPen("#d62728", width=2.5), brush=pg.mkBrush(0, 0, 0, 0), name="recommended")
            item.addItem(self.recommended)  # named: the legend lists it
        self._draw_times(time_item, points)
        self._set_axes(item, time_item, points)
        for plot in (item, time_item):  # no empty legend box over an empty graph
            if plot.legend is not None:
                plot.legend.setVisible(bool(plot.legend.items))

    def _draw_times(self, time_item: pg.PlotItem, points: Sequence[StudyPoint]) -> None:
        rows = [r for r in epoch_times(points) if r[1] > 0]
        predicted = [(_x(b), s) for _w, b, s, _m in rows if s is not None]
        measured = [(_x(b), m) for _w, b, _s, m in rows if m is not None]
        if predicted:
            time_item.plot([x for x, _ in predicted], [s for _, s in predicted], pen=pg.mkPen(PREDICTED_COLOR),
                           symbol="s", symbolSize=7, symbolBrush=pg.mkBrush(PREDICTED_COLOR),
                           symbolPen=pg.mkPen(PREDICTED_COLOR), name="predicted")
        if measured:
            time_item.plot([x for x, _ in measured], [m for _, m in measured], pen=None, symbol="t",
                           symbolSize=8, symbolBrush=pg.mkBrush(MEASURED_COLOR), symbolPen=pg.mkPen(MEASURED_COLOR),
                           name="measured here")

    def _set_axes(self, item: pg.PlotItem, time_item: pg.PlotItem, points: Sequence[StudyPoint]) -> None:
        """One tick per logical batch (top) and per worker count (bottom), the same x positions."""
        by_batch = sorted({(p.logical_batch, p.workers) for p in points if p.logical_batch > 0})
        item.getAxis("bottom").setTicks([[(_x(b), str(b)) for b, _w in by_batch]] if by_batch else None)
        time_item.getAxis("bottom").setTicks([[(_x(b), str(w)) for b, w in by_batch]] if by_batch else None)
        if by_batch:
            low, high = _x(by_batch[0][0]), _x(by_batch[-1][0])
            item.setXRange(low - 0.4, high + 0.4, padding=0)
            errors = [float(p.validation_error) for p in points if p.validation_error is not None]
            if errors:
                top = max(errors + ([self.tolerance_line.value()] if self.tolerance_line is not None else []))
                span = max(top - min(errors), 0.01)
                item.setYRange(max(0.0, min(errors) - 0.15 * span), top + 0.2 * span, padding=0)
        else:
            item.setXRange(0.0, 1.0, padding=0)
            item.setYRange(0.0, 1.0, padding=0)
        time_item.enableAutoRange(axis="y")
