"""A connection on the canvas: a curve with an arrow from a layer's output pin to an input pin; an edge that
jumps over rows of nodes (a skip connection) follows its route around them (``edge_routes``) with rounded bends.

``target``/``index`` identify the edge in the model (``target.inputs[index] == source``), which
is what deleting it needs.
"""
from __future__ import annotations

import math
from typing import Any, List, Optional, Tuple

from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QPainter, QPainterPath, QPainterPathStroker, QPen, QPolygonF
from PySide6.QtWidgets import QGraphicsItem, QGraphicsPathItem, QStyleOptionGraphicsItem, QWidget

from nnconsole.app.edit import style
from nnconsole.app.edit.edge_routes import CORNER
from nnconsole.app.edit.node_item import PORT_RADIUS

ARROW = 7.0


def curve(start: QPointF, end: QPointF) -> QPainterPath:
    """A vertical S-curve from ``start`` (an output pin) down to ``end`` (an input pin)."""
    path = QPainterPath(start)
    dy = end.y() - start.y()
    bend = max(20.0, abs(dy) * 0.45) if dy > 0 else max(60.0, abs(dy) * 0.3 + 40)
    path.cubicTo(QPointF(start.x(), start.y() + bend), QPointF(end.x(), end.y() - bend - ARROW),
                 QPointF(end.x(), end.y() - ARROW))
    path.lineTo(end)
    return path


def rounded_polyline(points: List[Tuple[float, float]]) -> QPainterPath:
    """A path through ``points`` whose bends are rounded (a quarter curve of radius up to CORNER)."""
    path = QPainterPath(QPointF(*points[0]))
    for i in range(1, len(points) - 1):
        (ax, ay), (bx, by), (cx, cy) = points[i - 1], points[i], points[i + 1]
        before, after = math.hypot(bx - ax, by - ay), math.hypot(cx - bx, cy - by)
        r = min(CORNER, before / 2, after / 2)
        if r <= 0:
            continue
        path.lineTo(QPointF(bx - (bx - ax) / before * r, by - (by - ay) / before * r))
        path.quadTo(QPointF(bx, by), QPointF(bx + (cx - bx) / after * r, by + (cy - by) / after * r))
    path.lineTo(QPointF(*points[-1]))
    return path


class EdgeItem(QGraphicsPathItem):
    """The connection ``source`` -> ``target`` at input pin ``index``."""

    def __init__(self, source: Any, target: Any, index: int) -> None:
        super().__init__()
        self.source = source  # NodeItem
        self.target = target  # NodeItem
        self.index = index
        self.setFlag(QGraphicsItem.ItemIsSelectable)
        self.setAcceptHoverEvents(True)
        self.setZValue(0)
        self._hover = False
        self.update_path()

    @property
    def key(self) -> tuple:
        return (self.target.name, self.index)

    def update_path(self) -> None:
        end = self.target.input_anchor(self.index) if self.index < len(self.target.in_ports) else \
            self.target.input_anchor(0)
        start = self.source.output_anchor()
        start, end = QPointF(start.x(), start.y() + PORT_RADIUS), QPointF(end.x(), end.y() - PORT_RADIUS)
        scene = self.scene()
        route = scene.route(self.source.name, self.target.name, (start.x(), start.y()), (end.x(), end.y())) \
            if scene is not None and hasattr(scene, "route") else None
        self.setPath(rounded_polyline(route) if route else curve(start, end))

    def shape(self) -> QPainterPath:
        stroker = QPainterPathStroker()
        stroker.setWidth(10)
        return stroker.createStroke(self.path())

    def hoverEnterEvent(self, event: Any) -> None:  # noqa: N802 - Qt override
        self._hover = True
        self.update()

    def hoverLeaveEvent(self, event: Any) -> None:  # noqa: N802 - Qt override
        self._hover = False
        self.update()

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: Optional[QWidget] = None) -> None:
        painter.setRenderHint(QPainter.Antialiasing)
        color = style.SELECTED_COLOR if self.isSelected() else style.EDGE_COLOR
        width = 2.4 if self.isSelected() or self._hover else 1.5
        painter.setPen(QPen(color, width, Qt.SolidLine, Qt.RoundCap, Qt.RoundJoin))
        painter.setBrush(Qt.NoBrush)
        path = self.path()
        painter.drawPath(path)
        end = path.pointAtPercent(1.0)
        last = path.elementAt(path.elementCount() - 2)  # the arrow points along the path's last piece
        before = QPointF(last.x, last.y)
        angle = math.atan2(end.y() - before.y(), end.x() - before.x())
        left = QPointF(end.x() - ARROW * math.cos(angle - 0.45), end.y() - ARROW * math.sin(angle - 0.45))
        right = QPointF(end.x() - ARROW * math.cos(angle + 0.45), end.y() - ARROW * math.sin(angle + 0.45))
        painter.setPen(Qt.NoPen)
        painter.setBrush(color)
        painter.drawPolygon(QPolygonF([end, left, right]))

    def boundingRect(self):  # noqa: N802 - Qt override
        return super().boundingRect().adjusted(-ARROW, -ARROW, ARROW, ARROW)
