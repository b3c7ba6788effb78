"""The canvas view: dotted light background, rubber-band selection, Ctrl+wheel zoom, middle-button
panning, fit-to-network, and dropping layers dragged from the palette.
"""
from __future__ import annotations

import math
from typing import Any, Optional

from PySide6.QtCore import QPointF, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QPainter, QPolygonF
from PySide6.QtWidgets import QGraphicsView, QStyle, QWidget

from nnconsole.app.edit.palette import MIME_LAYER_TYPE
from nnconsole.app.widgets import theme

MIN_ZOOM, MAX_ZOOM = 0.02, 3.0  # 2%: Fit Network shows even a network of hundreds of layers whole
ZOOM_STEP = 1.2
FIT_MARGIN = 30.0  # scene units around the nodes when the whole network is shown
GRID = 20.0


class NetworkView(QGraphicsView):
    """Shows a NetworkScene; zoom is kept between MIN_ZOOM and MAX_ZOOM."""

    layer_dropped = Signal(str, QPointF)  # a palette layer type dropped at a scene position
    zoom_changed = Signal(float)

    def __init__(self, scene: Any, parent: Optional[QWidget] = None) -> None:
        super().__init__(scene, parent)
        self.setObjectName("network_view")
        self.setRenderHints(QPainter.Antialiasing | QPainter.TextAntialiasing | QPainter.SmoothPixmapTransform)
        self.setDragMode(QGraphicsView.RubberBandDrag)
        self.setRubberBandSelectionMode(Qt.IntersectsItemShape)
        self.setTransformationAnchor(QGraphicsView.AnchorUnderMouse)
        self.setResizeAnchor(QGraphicsView.AnchorViewCenter)
        self.setViewportUpdateMode(QGraphicsView.SmartViewportUpdate)
        self.setAcceptDrops(True)
        self.setFocusPolicy(Qt.StrongFocus)
        self._pan_from: Optional[QPointF] = None
        self._open_pending = False  # show_top asked while hidden: done when first shown
        scene.sceneRectChanged.connect(self._follow_scene_rect)

    def _follow_scene_rect(self, rect: QRectF) -> None:
        """The scene's area changed (a node was dragged, added or removed): scroll over it and over what is in
        view now, and keep the same point in the centre. Left to itself, a view zoomed out beyond the
        scene's area centres that area, so the whole picture jumped after every drag at a low zoom."""
        port = self.viewport().rect()
        centre = self.mapToScene(port.center())
        self.setSceneRect(rect.united(self.mapToScene(port).boundingRect()))
        self.centerOn(centre)

    # ---- zoom -----------------------------------------------------------------------------------
    def zoom(self) -> float:
        return self.transform().m11()

    def set_zoom(self, factor: float) -> None:
        """Zoom to ``factor``, kept between the smallest zoom (MIN_ZOOM, or less where that is what shows
        the whole network) and MAX_ZOOM."""
        low = min(MIN_ZOOM, self.fit_zoom() or MIN_ZOOM)
        factor = max(low, min(MAX_ZOOM, factor))
        scale = factor / self.zoom()
        if not math.isclose(scale, 1.0):
            self.scale(scale, scale)
            self.zoom_changed.emit(self.zoom())

    def fit_zoom(self) -> Optional[float]:
        """The zoom that shows every node with a margin in the viewport, or None for an empty network."""
        rect = self.scene().nodes_rect()
        if rect.isNull() or rect.isEmpty():
            return None
        rect = rect.adjusted(-FIT_MARGIN, -FIT_MARGIN, FIT_MARGIN, FIT_MARGIN)
        port = self.maximumViewportSize()  # the viewport without scroll bars, less room for both of them:
        bar = self.style().pixelMetric(QStyle.PM_ScrollBarExtent)  # they come and go with the zoom
        return max(1e-4, min((port.width() - bar) / rect.width(), (port.height() - bar) / rect.height()))

    def zoom_in(self) -> None:
        self.set_zoom(self.zoom() * ZOOM_STEP)

    def zoom_out(self) -> None:
        self.set_zoom(self.zoom() / ZOOM_STEP)

    def zoom_reset(self) -> None:
        self.set_zoom(1.0)

    def fit(self) -> None:
        """Show the whole network, never magnified beyond 100%, however many layers it has."""
        wanted = self.fit_zoom()
        if wanted is None:
            self.zoom_reset()
            return
        self.set_zoom(min(1.0, wanted))
        self.centerOn(self.scene().nodes_rect().center())
        self.zoom_changed.emit(self.zoom())

    def show_top(self) -> None:
        """How a network opens: at 100% when its whole width fits, else zoomed out just enough that every
        column shows (none cut off at a side); centred when it fits whole, else from its top."""
        rect = self.scene().nodes_rect()
        self._open_pending = not self.isVisible()  # a hidden view's size means nothing: again when shown
        if rect.isNull() or rect.isEmpty() or self._open_pending:
            self.zoom_reset()
            return
        rect = rect.adjusted(-FIT_MARGIN, -FIT_MARGIN, FIT_MARGIN, FIT_MARGIN)
        self.set_zoom(min(1.0, self.viewport().width() / rect.width()))
        visible = self.mapToScene(self.viewport().rect()).boundingRect()
        if rect.height() <= visible.height():
            self.centerOn(rect.center())
        else:
            self.centerOn(QPointF(rect.center().x(), rect.top() + visible.height() / 2))

    def showEvent(self, event: Any) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        if self._open_pending:
            QTimer.singleShot(0, self.show_top)  # once the layout has given the view its size

    def wheelEvent(self, event: Any) -> None:  # noqa: N802 - Qt override
        if event.modifiers() & Qt.ControlModifier:
            steps = event.angleDelta().y() / 120.0
            self.set_zoom(self.zoom() * (ZOOM_STEP ** steps))
            event.accept()
            return
        super().wheelEvent(event)

    # ---- panning with the middle button -------------------------------------------------------
    def mousePressEvent(self, event: Any) -> None:  # noqa: N802 - Qt override
        if event.button() == Qt.MiddleButton:
            self._pan_from = event.position()
            self.viewport().setCursor(Qt.ClosedHandCursor)
            event.accept()
            return
        super().mousePressEvent(event)

    def mouseMoveEvent(self, event: Any) -> None:  # noqa: N802 - Qt override
        if self._pan_from is not None:
            delta = event.position() - self._pan_from
            self._pan_from = event.position()
            self.horizontalScrollBar().setValue(self.horizontalScrollBar().value() - int(delta.x()))
            self.verticalScrollBar().setValue(self.verticalScrollBar().value() - int(delta.y()))
            event.accept()
            return
        super().mouseMoveEvent(event)

    def mouseReleaseEvent(self, event: Any) -> None:  # noqa: N802 - Qt override
        if self._pan_from is not None and event.button() == Qt.MiddleButton:
            self._pan_from = None
            self.viewport().unsetCursor()
            event.accept()
            return
        super().mouseReleaseEvent(event)

    # ---- drops from the palette -----------------------------------------------------------------
    def _layer_type(self, event: Any) -> Optional[str]:
        mime = event.mimeData()
        if mime is not None and mime.hasFormat(MIME_LAYER_TYPE):
            return bytes(mime.data(MIME_LAYER_TYPE)).decode("utf-8")
        return None

    def dragEnterEvent(self, event: Any) -> None:  # noqa: N802 - Qt override
        if self._layer_type(event):
            event.acceptProposedAction()
        else:
            super().dragEnterEvent(event)

    def dragMoveEvent(self, event: Any) -> None:  # noqa: N802 - Qt override
        if self._layer_type(event):
            event.acceptProposedAction()
        else:
            super().dragMoveEvent(event)

    def dropEvent(self, event: Any) -> None:  # noqa: N802 - Qt override
        type_name = self._layer_type(event)
        if type_name:
            self.layer_dropped.emit(type_name, self.mapToScene(event.position().toPoint()))
            event.acceptProposedAction()
        else:
            super().dropEvent(event)

    # ---- background -----------------------------------------------------------------------------
    def drawBackground(self, painter: QPainter, rect: QRectF) -> None:  # noqa: N802 - Qt override
        colors = theme.colors()  # the palette's: a dark theme gets a dark canvas
        painter.fillRect(rect, colors.canvas)
        if self.zoom() < 0.45:
            return
        painter.setPen(colors.canvas_dot)
        left = math.floor(rect.left() / GRID) * GRID
        top = math.floor(rect.top() / GRID) * GRID
        points = []
        y = top
        while y < rect.bottom():
            x = left
            while x < rect.right():
                points.append(QPointF(x, y))
                x += GRID
            y += GRID
        if points:
            painter.drawPoints(QPolygonF(points))
