"""The EDIT canvas's overview: the whole network in miniature in the canvas's top-right corner, with
the part the canvas shows framed; a click or drag there moves the canvas to that spot.

It paints one small box per layer in its group's colour (never the layer items themselves), so a
ResNet-110-sized network of 385 layers repaints in a few milliseconds. It shows only while the
network does not fit in the canvas.
"""
from __future__ import annotations

from typing import Any

from PySide6.QtCore import QEvent, QObject, QPointF, QRectF, Qt, QTimer
from PySide6.QtGui import QColor, QMouseEvent, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QWidget

from nnconsole.app.edit import style

WIDTH = 150.0
MIN_WIDTH = 48.0
MAX_HEIGHT = 380.0
MARGIN = 8
PADDING = 6.0
FRAME_COLOR = QColor("#1565c0")


class Minimap(QWidget):
    """An overview of ``view``'s scene (a NetworkScene), kept over the view's top-right corner."""

    def __init__(self, view: Any) -> None:
        super().__init__(view)  # a child of the view, not of its viewport: it must not scroll
        self.setObjectName("edit_minimap")
        self.view = view
        self.enabled_by_user = True
        self.setCursor(Qt.PointingHandCursor)
        self.setToolTip("Overview: click or drag to move the canvas")
        self._bounds = QRectF()
        self._scale = 1.0
        self._offset = QPointF()
        self._relayout = QTimer(self)
        self._relayout.setSingleShot(True)
        self._relayout.setInterval(0)
        self._relayout.timeout.connect(self.relayout)
        view.installEventFilter(self)
        view.horizontalScrollBar().valueChanged.connect(self.update)
        view.verticalScrollBar().valueChanged.connect(self.update)
        view.zoom_changed.connect(self._relayout.start)
        view.scene().changed.connect(self._scene_changed)
        self.hide()

    # ---- geometry --------------------------------------------------------------------------------
    def set_enabled_by_user(self, on: bool) -> None:
        self.enabled_by_user = on
        self.relayout()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if watched is self.view and event.type() in (QEvent.Resize, QEvent.Show):
            self._relayout.start()
        return False

    def _scene_changed(self, _regions: Any = None) -> None:
        self._relayout.start()  # coalesced: a drag changes the scene many times per frame

    def visible_scene_rect(self) -> QRectF:
        return self.view.mapToScene(self.view.viewport().rect()).boundingRect()

    def relayout(self) -> None:
        """Fit the network into the overview, place it in the corner, show it only when needed."""
        bounds = self.view.scene().nodes_rect()
        self._bounds = bounds.adjusted(-20, -20, 20, 20) if not bounds.isNull() else QRectF()
        viewport = self.view.viewport()
        needed = (self.enabled_by_user and not self._bounds.isEmpty()
                  and not self.visible_scene_rect().contains(bounds))
        if not needed:
            self.hide()
            return
        max_h = min(MAX_HEIGHT, viewport.height() - 2 * MARGIN)
        scale = min((WIDTH - 2 * PADDING) / self._bounds.width(), (max_h - 2 * PADDING) / self._bounds.height())
        width = max(MIN_WIDTH, self._bounds.width() * scale + 2 * PADDING)  # a tall network: a narrow map
        height = max(24.0, self._bounds.height() * scale + 2 * PADDING)
        self._scale = scale
        self._offset = QPointF((width - self._bounds.width() * scale) / 2, PADDING)
        x = viewport.geometry().right() - width - MARGIN + 1
        self.setGeometry(int(x), viewport.geometry().top() + MARGIN, int(width), int(height))
        self.show()
        self.raise_()
        self.update()

    def to_scene(self, point: QPointF) -> QPointF:
        return QPointF(self._bounds.left() + (point.x() - self._offset.x()) / self._scale,
                       self._bounds.top() + (point.y() - self._offset.y()) / self._scale)

    def to_map(self, rect: QRectF) -> QRectF:
        return QRectF(self._offset.x() + (rect.left() - self._bounds.left()) * self._scale,
                      self._offset.y() + (rect.top() - self._bounds.top()) * self._scale,
                      rect.width() * self._scale, rect.height() * self._scale)

    # ---- painting and mouse ------------------------------------------------------------------------
    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        painter = QPainter(self)
        painter.fillRect(self.rect(), QColor(255, 255, 255, 225))
        painter.setPen(QPen(QColor("#c4cad3")))
        painter.drawRect(self.rect().adjusted(0, 0, -1, -1))
        painter.setPen(Qt.NoPen)
        for node in self.view.scene().nodes().values():
            box = self.to_map(node.sceneBoundingRect())
            box.setHeight(max(box.height(), 1.5))
            box.setWidth(max(box.width(), 2.0))
            _, accent = style.group_colors(node.group)
            painter.fillRect(box, style.SELECTED_COLOR if node.isSelected() else accent)
        frame = self.to_map(self.visible_scene_rect()).intersected(QRectF(self.rect()).adjusted(1, 1, -2, -2))
        painter.setPen(QPen(FRAME_COLOR, 1.5))
        painter.setBrush(QColor(21, 101, 192, 30))
        painter.drawRect(frame)

    def _move_view(self, event: QMouseEvent) -> None:
        self.view.centerOn(self.to_scene(event.position()))
        self.update()
        event.accept()

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt override
        if event.button() == Qt.LeftButton:
            self._move_view(event)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt override
        if event.buttons() & Qt.LeftButton:
            self._move_view(event)

