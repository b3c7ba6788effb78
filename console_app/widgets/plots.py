"""Shared pyqtgraph helpers: one plot style in the theme's colours (``theme``), fast curves, and growable point buffers.

Curves that receive live data keep their handle and get ``setData`` on a timer; they clip to the
view and downsample automatically ('peak' keeps spikes visible), so 100,000 points stay smooth.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QColor, QFont

from nnconsole.app.widgets import theme

# Colour-blind-friendly (Okabe-Ito / Tableau-like) colours: one per run in overlays.
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
           "#7f7f7f", "#bcbd22")
TRAIN_COLOR = "#1f77b4"
VALID_COLOR = "#d62728"
LR_COLOR = "#2ca02c"


def color(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def make_plot_widget(title: str = "", x_label: str = "", y_label: str = "", parent=None,
                     legend: bool = True) -> pg.PlotWidget:
    """A PlotWidget in the theme's colours (axes, grid, background), with axis labels and (optionally) a legend;
    it follows a change of theme."""
    widget = pg.PlotWidget(parent=parent, background=theme.colors().base)
    style_plot_item(widget.getPlotItem(), title, x_label, y_label, legend)
    follow_theme(widget, [widget.getPlotItem()])
    return widget


def style_plot_item(item: pg.PlotItem, title: str = "", x_label: str = "", y_label: str = "",
                    legend: bool = True) -> pg.PlotItem:
    """Apply the console's plot style to a PlotItem (also used inside GraphicsLayoutWidgets)."""
    font = QFont()
    font.setPointSize(9)
    for name in ("left", "bottom"):
        axis = item.getAxis(name)
        # An opaque light grid on major and minor ticks only: translucent grid lines over three tick
        # levels made every repaint several times slower (bench/gui.py).
        axis.setStyle(maxTickLevel=1)
        axis.setTickFont(font)
        axis.enableAutoSIPrefix(False)  # "error (x0.001)" reads badly; show plain numbers
        axis.setZValue(-1)  # grid lines under the curves (an opaque grid would hide a flat curve)
    item.showGrid(x=True, y=True, alpha=1.0)
    text = theme.colors().text.name()
    if title:
        item.setTitle(title, color=text, size="10pt")
    if x_label:
        item.setLabel("bottom", x_label, color=text)
    if y_label:
        item.setLabel("left", y_label, color=text)
    if legend:
        item.addLegend(offset=(-8, 8))
    recolor_plot_item(item)
    return item


def recolor_plot_item(item: pg.PlotItem) -> None:
    """Give ``item``'s axes, grid, labels and legend the current theme's colours."""
    c = theme.colors()
    for name in ("left", "bottom"):
        axis = item.getAxis(name)
        axis.setPen(pg.mkPen(c.grid.name()))  # first: AxisItem.setPen also recolours the label
        axis.setTextPen(pg.mkPen(c.text.name()))
        if axis.label is not None and axis.labelText:
            axis.setLabel(axis.labelText, units=axis.labelUnits, color=c.text.name())
    if item.titleLabel.text:
        item.titleLabel.setText(item.titleLabel.text, color=c.text.name())
    legend = item.legend
    if legend is not None:
        base = QColor(c.base)
        base.setAlpha(220)
        legend.setBrush(pg.mkBrush(base))
        legend.setPen(pg.mkPen(c.muted.name()))
        legend.setLabelTextColor(c.text.name())


class _ThemeFollower(QObject):
    """Restyles one plot view when the theme changes; a child of the view, so it goes with it."""

    def __init__(self, view: Any, items: List[pg.PlotItem]) -> None:
        super().__init__(view)
        self.view, self.items = view, items
        theme.notifier().changed.connect(self.restyle)

    def restyle(self) -> None:
        self.view.setBackground(theme.colors().base)
        for item in self.items:
            recolor_plot_item(item)


def follow_theme(view: Any, items: List[pg.PlotItem]) -> None:
    """Keep ``view`` (a PlotWidget or GraphicsLayoutWidget) and its plot ``items`` in the theme's colours."""
    follower = getattr(view, "_theme_follower", None)
    if follower is None:
        view._theme_follower = _ThemeFollower(view, list(items))
    else:
        follower.items.extend(i for i in items if i not in follower.items)


def fast_curve(item: pg.PlotItem, pen_color: str, name: Optional[str] = None, width: float = 1.6,
               dashed: bool = False, symbol: Optional[str] = None) -> pg.PlotDataItem:
    """A curve tuned for live data: clip to view, automatic 'peak' downsampling, no antialiasing."""
    pen = pg.mkPen(pen_color, width=width, style=Qt.DashLine if dashed else Qt.SolidLine)
    kwargs = {}
    if symbol:
        kwargs = {"symbol": symbol, "symbolSize": 6, "symbolBrush": pg.mkBrush(pen_color),
                  "symbolPen": pg.mkPen(pen_color)}
    curve = item.plot([], [], pen=pen, name=name, antialias=False, **kwargs)
    if symbol:  # the legend draws the marker from the scatter's own defaults, which a curve without points yet
        curve.scatter.setBrush(kwargs["symbolBrush"])  # never received: it showed pyqtgraph's grey-blue
        curve.scatter.setPen(kwargs["symbolPen"])
    curve.setClipToView(True)
    curve.setDownsampling(auto=True, method="peak")
    # pyqtgraph's default factor 5 still draws several thousand points per curve; 1 draws about one
    # point per pixel column, which keeps a 100,000-point redraw within a frame (bench/gui.py).
    curve.opts["autoDownsampleFactor"] = 1.0
    return curve


class GrowingSeries:
    """x/y float64 buffers that grow by doubling, so appending a batch of points is amortised O(batch).

    ``data()`` returns views of the filled part; later appends never change an earlier view.
    """

    def __init__(self, capacity: int = 256) -> None:
        self._x = np.empty(capacity, dtype=np.float64)
        self._y = np.empty(capacity, dtype=np.float64)
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def extend(self, xs: Sequence[float], ys: Sequence[float]) -> None:
        xs = np.asarray(xs, dtype=np.float64)
        ys = np.asarray(ys, dtype=np.float64)
        need = self._n + len(xs)
        if need > len(self._x):
            # Room to spare even after a bulk load (a loaded run is followed by live appends), and a
            # plain copy: np.resize of 100,000 points took 1 ms per array (bench/gui.py).
            size = max(2 * len(self._x), 1 << (need - 1).bit_length())
            for name in ("_x", "_y"):
                grown = np.empty(size, dtype=np.float64)
                grown[: self._n] = getattr(self, name)[: self._n]
                setattr(self, name, grown)
        self._x[self._n: need] = xs
        self._y[self._n: need] = ys
        self._n = need

    def data(self) -> Tuple[np.ndarray, np.ndarray]:
        return self._x[: self._n], self._y[: self._n]
