"""Learning curves: loss, error and learning rate against epochs, for one run and overlaid runs.

Records come from ``metrics.jsonl`` (``train`` per monitor interval, ``validation`` per epoch, and with
several optimizers ``optimizer_loss``: one more loss curve per optimizer, named in the legend). Each
run keeps growable buffers and curve handles; new records append to the buffers and the affected
curves get one ``setData`` per timer tick. Curves clip to the view and downsample ('peak'), so
100,000 points per curve stay smooth.
"""
from __future__ import annotations

import csv
import math
import os
from typing import Any, Dict, Iterable, List, Optional

import pyqtgraph as pg
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QGraphicsItem, QVBoxLayout, QWidget

from nnconsole.app.widgets import theme
from nnconsole.app.widgets.grid import SharedXGrid
from nnconsole.app.widgets.plots import (LR_COLOR, TRAIN_COLOR, VALID_COLOR, GrowingSeries, color, fast_curve,
                                       follow_theme, style_plot_item)
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.project.structure import FIRST_OPTIMIZER
from nnconsole.engine.rundir.protocol import OPTIMIZER_LOSS, TRAIN, VALIDATION
from nnconsole.engine.rundir.notes import read_note
from nnconsole.engine.rundir.store import read_plan
from nnconsole.engine.rundir.typed_json import RunFileError

SERIES = ("train_loss", "train_error", "valid_loss", "valid_error", "lr")
Y_HEADROOM = 1.1  # the y axis ends 10% above the largest value shown
MAX_MARKERS = 300  # validation points drawn with markers up to this many epochs, as a plain line beyond
PLOT_OF = {"train_loss": "loss", "valid_loss": "loss", "train_error": "error", "valid_error": "error", "lr": "lr"}
CSV_FIELDS = ("type", "optimizer", "epoch", "iteration", "loss", "error", "lr", "samples_per_s", "elapsed")
OPTIMIZER_KEY = "optimizer_loss:"  # + the optimizer's name: the series of an optimizer after the first


def plot_of(key: str) -> str:
    """The plot ('loss', 'error' or 'lr') a series is drawn in; every optimizer's loss is a loss."""
    return PLOT_OF.get(key, "loss")


def run_label(run_dir: str) -> str:
    """A legend label that says what differs between runs: 'N=2, batch 64, LR 0.002 (20261122_0039)', with the
    title the user gave the run (note.json) in place of its folder name."""
    name = read_note(run_dir).title or os.path.basename(run_dir.rstrip(os.sep))
    try:
        plan = read_plan(run_dir)
    except RunFileError:  # damaged: the name alone
        return name
    if plan is None or None in (plan.workers, plan.logical_batch, plan.effective_lr):
        return name
    return f"N={plan.workers}, batch {plan.logical_batch}, LR {plan.effective_lr:g} ({name})"


class RunCurves:
    """One run's series (epoch -> value) and its curve handles in the three plots."""

    def __init__(self, run_dir: str, plots: Dict[str, pg.PlotItem], index: int, primary: bool) -> None:
        self.run_dir = run_dir
        self.name = run_label(run_dir)
        self.series = {key: GrowingSeries() for key in SERIES}
        self.records: List[Dict[str, Any]] = []
        self.dirty = set(SERIES)
        self.curves: Dict[str, pg.PlotDataItem] = {}
        self.primary = primary
        self.planned_epochs = 0  # the run's whole span in epochs, from its first train record
        self.top: Dict[str, float] = {}  # largest finite value per plot (loss, error, lr)
        if primary:
            styles = {"train_loss": (TRAIN_COLOR, "training", False, None),
                      "valid_loss": (VALID_COLOR, "validation", False, "o"),
                      "train_error": (TRAIN_COLOR, "training", False, None),
                      "valid_error": (VALID_COLOR, "validation", False, "o"),
                      "lr": (LR_COLOR, "learning rate", False, None)}
        else:
            c = color(index + 3)  # skip the primary run's blue, red and green
            styles = {"train_loss": (c, f"{self.name} training", True, None),
                      "valid_loss": (c, f"{self.name} validation", False, "t"),
                      "train_error": (c, f"{self.name} training", True, None),
                      "valid_error": (c, f"{self.name} validation", False, "t"),
                      "lr": (c, self.name, True, None)}
        self.symbols = {key for key, style in styles.items() if style[3]}
        self.plots = plots
        self.index = index
        for key, (pen, name, dashed, symbol) in styles.items():
            self.curves[key] = fast_curve(plots[PLOT_OF[key]], pen, name, width=1.0,
                                          dashed=dashed, symbol=symbol)
            self.curves[key].setZValue(10 if primary else 1)

    def optimizer_names(self) -> List[str]:
        """The optimizers after the first whose losses this run wrote, in the order they appeared."""
        return [key[len(OPTIMIZER_KEY):] for key in self.series if key.startswith(OPTIMIZER_KEY)]

    def _optimizer_series(self, name: str) -> str:
        """The series key of optimizer ``name``, its curve made on its first record (named in the legend);
        the first optimizer's training curve is then named after it too."""
        key = OPTIMIZER_KEY + name
        if key in self.series:
            return key
        if not self.optimizer_names():
            self._rename(self.curves["train_loss"], f"{FIRST_OPTIMIZER} training" if self.primary
                         else f"{self.name} {FIRST_OPTIMIZER} training")
        self.series[key] = GrowingSeries()
        if self.primary:  # after the primary run's blue, red, green: orange, purple...
            pen, label, dashed = color(3 + len(self.optimizer_names()) - 1), f"{name} training", False
        else:
            pen, label, dashed = color(self.index + 3), f"{self.name} {name} training", True
        self.curves[key] = fast_curve(self.plots["loss"], pen, label, width=1.0, dashed=dashed)
        self.curves[key].setZValue(10 if self.primary else 1)
        return key

    def _rename(self, curve: pg.PlotDataItem, name: str) -> None:
        curve.opts["name"] = name
        legend = self.plots["loss"].legend
        label = legend.getLabel(curve) if legend is not None else None
        if label is not None:
            label.setText(name)

    def add(self, records: Iterable[Dict[str, Any]]) -> int:
        """Append train/validation records to the buffers; returns how many were used."""
        cols: Dict[str, tuple] = {key: ([], []) for key in SERIES}
        used = 0
        for r in records:
            kind = r.get("type")
            if kind == TRAIN:
                x = float(r.get("epoch", 0.0))
                if not self.planned_epochs:
                    self.planned_epochs = runs.planned_epochs(r)
                cols["train_loss"][0].append(x)
                cols["train_loss"][1].append(float(r.get("loss", float("nan"))))
                cols["train_error"][0].append(x)
                cols["train_error"][1].append(float(r.get("error", float("nan"))))
                if "lr" in r:
                    cols["lr"][0].append(x)
                    cols["lr"][1].append(float(r["lr"]))
            elif kind == OPTIMIZER_LOSS:
                key = self._optimizer_series(str(r.get("optimizer", "?")))
                xs, ys = cols.setdefault(key, ([], []))
                xs.append(float(r.get("epoch", 0.0)))
                ys.append(float(r.get("loss", float("nan"))))
            elif kind == VALIDATION:
                x = float(r.get("epoch", 0.0))
                cols["valid_loss"][0].append(x)
                cols["valid_loss"][1].append(float(r.get("loss", float("nan"))))
                cols["valid_error"][0].append(x)
                cols["valid_error"][1].append(float(r.get("error", float("nan"))))
            else:
                continue
            self.records.append(r)
            used += 1
        for key, (xs, ys) in cols.items():
            if xs:
                self.series[key].extend(xs, ys)
                self.dirty.add(key)
                finite = [y for y in ys if math.isfinite(y)]
                if finite:
                    plot = plot_of(key)
                    self.top[plot] = max(self.top.get(plot, 0.0), max(finite))
        return used

    def flush(self) -> None:
        """``setData`` on the curves whose series grew since the last flush."""
        for key in list(self.dirty):
            x, y = self.series[key].data()
            curve = self.curves[key]
            if key in self.symbols and len(x) > MAX_MARKERS and curve.opts.get("symbol"):
                curve.setSymbol(None)  # thousands of epoch markers cost more to draw than they show
            curve.setData(x, y)
        self.dirty.clear()

    def remove(self, plots: Dict[str, pg.PlotItem]) -> None:
        for key, curve in self.curves.items():
            plots[plot_of(key)].removeItem(curve)
            legend = plots[plot_of(key)].legend
            if legend is not None:
                legend.removeItem(curve)


def _left_axis_width() -> int:
    """A fixed width for the y axes that fits tick labels such as '-0.000125' and the axis title.

    pyqtgraph otherwise resizes an axis to its widest label after a paint; that re-laid out all
    three plots and re-rendered every axis on the next update (31 ms at 1e5 points, bench/gui.py),
    and let the three plots' left edges drift apart when one label grew.
    """
    font = QFont()
    font.setPointSize(9)
    metrics = QFontMetrics(font)
    return metrics.horizontalAdvance("-0.000125") + metrics.height() + 12


def _share_the_x_axis(plots: List[pg.PlotItem]) -> None:
    """Only the bottom plot of the x-linked stack draws an x axis; the others get its grid lines.

    A zoom regenerates every x axis; upper axes drawn only for their grid cost as much as the
    labelled one. With one axis, the median CPU time of a zoom dropped 14-46% (six paired runs of
    100 zooms, bench/README.md).
    """
    bottom_axis = plots[-1].getAxis("bottom")
    for item in plots[:-1]:
        item.hideAxis("bottom")
        item.showGrid(x=False, y=True, alpha=1.0)
        item.x_grid = SharedXGrid(item, bottom_axis)


class LearningCurves(QWidget):
    """Three linked plots (loss, error, learning rate) with a primary run and overlaid runs."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("learning_curves")
        self.view = pg.GraphicsLayoutWidget(self, show=False)
        self.view.setBackground(theme.colors().base)
        self.view.setObjectName("learning_curves_view")
        self.plots: Dict[str, pg.PlotItem] = {}
        left_width = _left_axis_width()
        for row, (key, title, label) in enumerate((("loss", "Loss", "loss"), ("error", "Error", "error"),
                                                   ("lr", "Learning rate", "LR"))):
            item = self.view.addPlot(row=row, col=0)
            bottom_plot = key == "lr"
            style_plot_item(item, title, "epoch" if bottom_plot else "", label, legend=True)
            item.setDownsampling(auto=True, mode="peak")
            item.setClipToView(True)
            for axis in ("left", "bottom"):  # tick text dominated every repaint (bench/gui.py)
                item.getAxis(axis).setCacheMode(QGraphicsItem.DeviceCoordinateCache)
            item.getAxis("left").setWidth(left_width)  # fixed: no re-layout when a label grows
            self.plots[key] = item
        follow_theme(self.view, list(self.plots.values()))
        _share_the_x_axis(list(self.plots.values()))
        lr_legend = self.plots["lr"].legend
        lr_legend.anchor(itemPos=(1, 1), parentPos=(1, 1), offset=(-8, -8))  # a flat LR sits at the top
        self.plots["error"].setXLink(self.plots["loss"])
        self.plots["lr"].setXLink(self.plots["loss"])
        self.view.ci.layout.setRowStretchFactor(0, 3)
        self.view.ci.layout.setRowStretchFactor(1, 3)
        self.view.ci.layout.setRowStretchFactor(2, 2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.view)
        self.runs: Dict[str, RunCurves] = {}
        self.primary: Optional[str] = None
        self.log_scale = False
        self._x_span = 0
        self._y_top: Dict[str, float] = {}

    # ---- runs ---------------------------------------------------------------------------------
    def set_primary(self, run_dir: Optional[str], records: Optional[List[Dict[str, Any]]] = None) -> None:
        """Show ``run_dir`` as the main run (overlays stay); ``records`` replaces its data when given."""
        run_dir = os.path.abspath(run_dir) if run_dir else None
        if self.primary and self.primary in self.runs:
            self.runs.pop(self.primary).remove(self.plots)
        if run_dir in self.runs:  # it was an overlay: promote it
            self.runs.pop(run_dir).remove(self.plots)
        self.primary = run_dir
        if run_dir is None:
            if self.runs:
                self.flush()
            else:
                self._empty_axes()
            return
        self.runs[run_dir] = RunCurves(run_dir, self.plots, 0, primary=True)
        if records:
            self.add_records(run_dir, records)
        self.flush()

    def set_overlays(self, overlays: Dict[str, List[Dict[str, Any]]]) -> None:
        """Overlay these runs (run_dir -> records) in their own colours; others are removed."""
        wanted = {os.path.abspath(k): v for k, v in overlays.items() if os.path.abspath(k) != self.primary}
        for run_dir in [r for r in self.runs if r != self.primary and r not in wanted]:
            self.runs.pop(run_dir).remove(self.plots)
        for run_dir, records in sorted(wanted.items()):
            if run_dir not in self.runs:  # the first colour no overlay shown has (an earlier one keeps its own)
                taken = {c.index for r, c in self.runs.items() if r != self.primary}
                index = next(i for i in range(len(taken) + 1) if i not in taken)
                self.runs[run_dir] = RunCurves(run_dir, self.plots, index, primary=False)
                self.runs[run_dir].add(records)
        self.flush()

    def _empty_axes(self) -> None:
        """Nothing shown: neutral axes, not the span and heights of the runs shown before."""
        self._x_span = 0
        self._y_top.clear()
        for plot in self.plots.values():
            plot.setRange(xRange=(0, 1), yRange=(0, 1), padding=0)
            plot.enableAutoRange()

    def overlays(self) -> List[str]:
        return [r for r in self.runs if r != self.primary]

    def add_records(self, run_dir: str, records: List[Dict[str, Any]]) -> None:
        """New records of a run shown here (ignored for runs not shown); curves update at once."""
        curves = self.runs.get(os.path.abspath(run_dir))
        if curves is not None and curves.add(records):
            curves.flush()
            self._fit_y()
            self._fit_x()

    def flush(self) -> None:
        for curves in self.runs.values():
            curves.flush()
        self._fit_y()
        self._fit_x()

    def _fit_x(self) -> None:
        """Show the runs' whole planned span in epochs, fixed while they grow.

        A live run then fills the plot left to right instead of rescaling the x axis (and
        re-rendering every axis) on each update; that kept redraws within a frame (bench/gui.py).
        """
        span = max((c.planned_epochs for c in self.runs.values()), default=0)
        if span == self._x_span:
            return
        self._x_span = span
        if span:
            self.plots["loss"].disableAutoRange(axis="x")
            self.plots["loss"].setXRange(0, span, padding=0.02)
        else:
            self.plots["loss"].enableAutoRange(axis="x")

    def _fit_y(self) -> None:
        """y axes from 0 to a little above the largest value, changed only when the data outgrow it
        (or shrink to a quarter of it): losses, errors and learning rates read best against zero, and
        a range that stays put spares re-rendering every axis on each update (bench/gui.py)."""
        if self.log_scale:
            return
        for plot in ("loss", "error", "lr"):
            top = max((c.top.get(plot, 0.0) for c in self.runs.values()), default=0.0)
            shown = self._y_top.get(plot, 0.0)
            if top <= 0:
                if shown:
                    self._y_top[plot] = 0.0
                    self.plots[plot].enableAutoRange(axis="y")
                continue
            if top > shown or top < shown / 4:
                self._y_top[plot] = top
                self.plots[plot].setYRange(0.0, top * Y_HEADROOM, padding=0)

    def point_count(self, series: str = "train_loss", run_dir: Optional[str] = None) -> int:
        curves = self.runs.get(os.path.abspath(run_dir) if run_dir else self.primary or "")
        return len(curves.series[series]) if curves else 0

    def curve(self, series: str, run_dir: Optional[str] = None) -> Optional[pg.PlotDataItem]:
        curves = self.runs.get(os.path.abspath(run_dir) if run_dir else self.primary or "")
        return curves.curves[series] if curves else None

    # ---- view options and export --------------------------------------------------------------
    def set_log_scale(self, on: bool) -> None:
        """Logarithmic y axes for loss, error and learning rate."""
        self.log_scale = bool(on)
        self._y_top.clear()  # back in linear mode the next fit sets every range again
        for item in self.plots.values():
            item.setLogMode(x=False, y=self.log_scale)
            item.enableAutoRange(axis="y")
        self._fit_y()

    def save_png(self, path: str) -> bool:
        return self.view.grab().save(path)

    def save_csv(self, path: str) -> int:
        """The primary run's train and validation records as CSV; returns the number of rows."""
        curves = self.runs.get(self.primary or "")
        rows = curves.records if curves else []
        with open(path, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(CSV_FIELDS), extrasaction="ignore", lineterminator="\n")
            writer.writeheader()
            for r in rows:
                writer.writerow({k: r.get(k, "") for k in CSV_FIELDS})
        return len(rows)
