"""Vertical grid lines for stacked plots that share one x range.

In a stack of x-linked plots only the bottom one needs an x axis with labels. The upper plots still
want vertical grid lines, but a pyqtgraph axis drawn only for its grid costs as much as a full one
on every zoom (its ticks, a plot-sized cached layer). ``SharedXGrid`` draws just the lines, inside a
view box, at the tick positions of the bottom plot's axis, so they line up with its labels.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import pyqtgraph as pg
from PySide6.QtCore import QLineF, QRectF
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QGraphicsObject, QStyleOptionGraphicsItem, QWidget

from nnconsole.app.widgets import theme

GRID_Z = -1e5  # above the view box's background (-1e6), below the curves
MIN_SPACING_PX = 6.0  # a tick level whose lines would be closer than this is left out


def tick_levels(axis: pg.AxisItem, low: float, high: float, pixels: float, levels: int) -> Tuple[Tuple[float, ...], ...]:
    """The values of ``axis``' first ``levels`` tick levels for a range, as the axis places them.

    Kept on the axis for its last range, so that several plots following one axis compute the ticks
    once per range (and nothing outlives the axis).
    """
    key = (low, high, pixels, levels)
    cached = getattr(axis, "_shared_tick_levels", None)
    if cached is not None and cached[0] == key:
        return cached[1]
    out = []
    for spacing, values in axis.tickValues(low, high, pixels)[:levels]:
        dense = abs(spacing) * pixels / max(high - low, 1e-300) < MIN_SPACING_PX
        out.append(() if dense else tuple(values))
    axis._shared_tick_levels = (key, tuple(out))
    return axis._shared_tick_levels[1]


class SharedXGrid(QGraphicsObject):
    """Vertical lines in ``plot``'s view box at the ticks of ``axis`` (another plot's bottom axis)."""

    def __init__(self, plot: pg.PlotItem, axis: pg.AxisItem, pens: Optional[Sequence[str]] = None) -> None:
        super().__init__(plot.getViewBox())
        self._axis = axis
        self._themed = pens is None  # the theme's grid colour (major) and a fainter one (minor), read when painting
        self._pens = [pg.mkPen(p) for p in (pens or ("#d4d4d4", "#e8e8e8"))]
        for pen in self._pens:
            pen.setCosmetic(True)
        self._lines: Optional[List[List[QLineF]]] = None
        self.setZValue(GRID_Z)
        view = plot.getViewBox()
        view.sigXRangeChanged.connect(self._invalidate)
        view.sigResized.connect(self._invalidate)

    def _invalidate(self, *args: object) -> None:
        self._lines = None
        self.prepareGeometryChange()
        self.update()

    def boundingRect(self) -> QRectF:
        return self.parentItem().boundingRect()

    def lines(self) -> List[List[QLineF]]:
        """Per tick level (major first), the lines in the view box's pixel coordinates."""
        if self._lines is not None:
            return self._lines
        rect = self.parentItem().boundingRect()
        x0, x1 = self.parentItem().viewRange()[0]
        self._lines = [[] for _ in self._pens]
        if x1 > x0 and rect.width() > 0:
            scale = rect.width() / (x1 - x0)
            for level, values in enumerate(tick_levels(self._axis, x0, x1, rect.width(), len(self._pens))):
                self._lines[level] = [QLineF(px, rect.top(), px, rect.bottom())
                                      for px in (rect.left() + (x - x0) * scale for x in values)]
        return self._lines

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: Optional[QWidget] = None) -> None:
        if self._themed:
            c = theme.colors()
            for pen, color in zip(self._pens, (c.grid, theme.blend(c.grid, c.base, 0.5))):
                pen.setColor(color)
        for pen, lines in reversed(list(zip(self._pens, self.lines()))):  # minor lines first, majors on top
            painter.setPen(pen)
            painter.drawLines(lines)
