"""One layer on the canvas: a rounded box coloured by group with its name, type, key parameters
and output shape, input pins on top and the output pin at the bottom.

A node only draws what ``set_layer`` gives it; moving it tells the scene (to redraw edges), and
the scene turns finished moves into undo commands.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QFontMetrics, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import (QGraphicsEllipseItem, QGraphicsItem, QGraphicsObject, QStyleOptionGraphicsItem,
                               QWidget)

from nnconsole.app.edit import style
from nnconsole.app.edit.layout import NODE_HEIGHT, NODE_WIDTH
from nnconsole.app.edit.scopes import sharing_text
from nnconsole.app.widgets.rich_text import bounded, esc
from nnconsole.app.widgets.search_range import range_text
from nnconsole.engine.network.shared_params import weight_scope_of
from nnconsole.engine.project.searched_properties import searched_props

PORT_RADIUS = 5.0


class PortItem(QGraphicsEllipseItem):
    """A connection pin: ``kind`` 'in' (with its pin index) or 'out'."""

    def __init__(self, node: "NodeItem", kind: str, index: int = 0) -> None:
        r = PORT_RADIUS
        super().__init__(-r, -r, 2 * r, 2 * r, node)
        self.node = node
        self.kind = kind
        self.index = index
        self.setAcceptHoverEvents(True)
        self.setZValue(2)
        self._set_hover(False)
        self.setCursor(Qt.CrossCursor if kind == "out" else Qt.ArrowCursor)

    def _set_hover(self, hover: bool) -> None:
        _, accent = style.group_colors(self.node.group)
        self.setPen(QPen(accent, 1.5))
        self.setBrush(QBrush(accent if hover else Qt.white))

    def hoverEnterEvent(self, event: Any) -> None:  # noqa: N802 - Qt override
        self._set_hover(True)
        super().hoverEnterEvent(event)

    def hoverLeaveEvent(self, event: Any) -> None:  # noqa: N802 - Qt override
        self._set_hover(False)
        super().hoverLeaveEvent(event)


class NodeItem(QGraphicsObject):
    """A layer box. ``name`` is the layer name (the key the scene finds it by)."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.type_name = ""
        self.group: Optional[str] = None
        self.summary = ""
        self.sharers: List[str] = []
        self.searched: List[str] = []  # properties marked searched (drawn as a 'search' tag and an amber outline)
        self.shape_text = ""
        self.error: Optional[str] = None
        self.input_names: List[str] = []
        self.in_ports: List[PortItem] = []
        self.out_port: Optional[PortItem] = None
        self.edges: List[Any] = []  # EdgeItems touching this node, kept by the scene
        self.setFlags(QGraphicsItem.ItemIsMovable | QGraphicsItem.ItemIsSelectable
                      | QGraphicsItem.ItemSendsGeometryChanges)
        self.xChanged.connect(self._moved)
        self.yChanged.connect(self._moved)
        self.setAcceptHoverEvents(True)
        self.setZValue(1)

    # ---- content --------------------------------------------------------------------------------
    def set_layer(self, layer: Any, spec: Any, info: Any, sharers: Sequence[str] = ()) -> None:
        """Show ``layer`` (engine Layer) with its registry ``spec`` (or None) and inference ``info``;
        ``sharers`` are the other layers reading the same weights (shown as a ⇄ mark and a tooltip line)."""
        self.name = layer.name
        self.type_name = layer.type
        self.group = spec.group if spec else None
        params = info.params if info is not None and info.params else layer.params
        if params is not layer.params:  # a property naming an Argument ('*ConvBS', 'n') is shown as the user wrote it
            params = {**params, **{k: v for k, v in layer.params.items() if isinstance(v, str) and k in params
                                   and not isinstance(params[k], str)}}
        self.summary = style.summarize_params(layer.type, params, spec.defaults() if spec else {})
        self.sharers = list(sharers)
        self.searched = searched_props(layer)
        if self.sharers:
            self.summary = f"⇄ {weight_scope_of(layer)}" + (f" · {self.summary}" if self.summary else "")
        shape = info.out_shape if info is not None else None
        self.shape_text = style.fmt_dims(shape) if shape is not None else ""
        self.error = info.error if info is not None else None
        self._set_ports(spec, len(layer.inputs))
        tip = [f"<b>{esc(bounded(layer.name, 200))}</b> ({esc(bounded(layer.type, 200))})"]  # names are the user's
        if spec is not None and spec.doc:
            tip.append(spec.doc)
        if shape is not None:
            tip.append(f"output: {style.fmt_dims(shape)}")
        if layer.type == "Unit" and str(layer.params.get("arguments", "") or "").strip():  # every argument it gives
            tip.append(esc(bounded("arguments: " + str(layer.params["arguments"]), 600)))
        if self.sharers:
            tip.append(esc(bounded(f"parameter scope '{weight_scope_of(layer)}': {sharing_text(self.sharers)}")))
        if self.searched:
            ranges = [f"{p} {range_text(layer.search[p])}" if p in layer.search else p for p in self.searched]
            tip.append(esc(bounded("searched by nnconsole search: " + "; ".join(ranges), 600)))
        if self.error:
            tip.append(f"<span style='color:#c62828'>{esc(bounded(self.error))}</span>")
        self.setToolTip("<br>".join(tip))
        self.update()

    def _set_ports(self, spec: Any, n_connected: int) -> None:
        lo, hi = spec.n_inputs if spec is not None else (0, None)
        self.input_names = list(spec.input_names) if spec is not None else []
        if spec is not None and spec.is_input:
            count = 0
        elif hi is None:
            count = max(lo, n_connected + 1)
        else:
            count = max(hi, n_connected)
        while len(self.in_ports) > count:
            port = self.in_ports.pop()
            port.setParentItem(None)
            if port.scene() is not None:
                port.scene().removeItem(port)
        while len(self.in_ports) < count:
            self.in_ports.append(PortItem(self, "in", len(self.in_ports)))
        for i, port in enumerate(self.in_ports):
            port.setPos(self.input_anchor(i, local=True))
            label = self.input_names[i] if i < len(self.input_names) else f"input {i + 1}"
            port.setToolTip(f"{label}: drop a connection here")
            port._set_hover(False)
        if self.out_port is None:
            self.out_port = PortItem(self, "out")
            self.out_port.setToolTip("drag from here to another layer to connect")
        self.out_port.setPos(NODE_WIDTH / 2, NODE_HEIGHT)
        self.out_port._set_hover(False)

    # ---- geometry ----------------------------------------------------------------------------------
    def input_anchor(self, index: int, local: bool = False) -> QPointF:
        count = max(1, len(self.in_ports))
        point = QPointF(NODE_WIDTH * (index + 1) / (count + 1), 0.0)
        return point if local else self.mapToScene(point)

    def output_anchor(self) -> QPointF:
        return self.mapToScene(QPointF(NODE_WIDTH / 2, NODE_HEIGHT))

    @staticmethod
    def box_rect() -> QRectF:
        """The box itself (without pins), in item coordinates."""
        return QRectF(0, 0, NODE_WIDTH, NODE_HEIGHT)

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt override
        m = PORT_RADIUS + 3
        return QRectF(-m, -m, NODE_WIDTH + 2 * m, NODE_HEIGHT + 2 * m)

    def shape(self) -> QPainterPath:
        path = QPainterPath()
        path.addRoundedRect(QRectF(0, 0, NODE_WIDTH, NODE_HEIGHT), 8, 8)
        return path

    def _moved(self) -> None:
        # xChanged/yChanged rather than an itemChange override: PySide6 6.12's itemChange wrapper
        # drops a reference to None on every call and crashes the interpreter after a few thousand.
        scene = self.scene()
        if scene is not None and getattr(scene, "deferring_routes", False):
            return  # the scene rebuilds every edge after moving all nodes
        if scene is not None and hasattr(scene, "invalidate_routes"):
            scene.invalidate_routes()
        for edge in self.edges:
            edge.update_path()

    # ---- drawing -----------------------------------------------------------------------------------
    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: Optional[QWidget] = None) -> None:
        painter.setRenderHint(QPainter.Antialiasing)
        fill, accent = style.group_colors(self.group)
        rect = QRectF(0, 0, NODE_WIDTH, NODE_HEIGHT)
        body = QPainterPath()
        body.addRoundedRect(rect, 8, 8)
        if self.isSelected():  # soft halo behind the box
            painter.setPen(Qt.NoPen)
            halo = QPainterPath()
            halo.addRoundedRect(rect.adjusted(-4, -4, 4, 4), 11, 11)
            painter.fillPath(halo, style.SELECTED_COLOR.lighter(185))
        painter.fillPath(body, style.ERROR_FILL if self.error else fill)
        stripe = QPainterPath()
        stripe.addRect(QRectF(0, 0, 6, NODE_HEIGHT))
        painter.fillPath(body.intersected(stripe), style.ERROR_COLOR if self.error else accent)
        if self.error:
            pen = QPen(style.ERROR_COLOR, 2.2)
        elif self.isSelected():
            pen = QPen(style.SELECTED_COLOR, 2.2)
        else:
            pen = QPen(accent, 1.1)
        painter.setPen(pen)
        painter.setBrush(Qt.NoBrush)
        painter.drawPath(body)
        if self.searched:
            self._paint_search_tag(painter, rect)
        self._paint_text(painter, accent)

    def _paint_search_tag(self, painter: QPainter, rect: QRectF) -> None:
        """An amber dashed outline and a tag on the bottom edge (a magnifier and the property names): properties
        marked searched. The tooltip lists them with their ranges."""
        painter.setPen(QPen(style.SEARCH_COLOR, 1.6, Qt.DashLine))
        painter.setBrush(Qt.NoBrush)
        painter.drawRoundedRect(rect.adjusted(-3, -3, 3, 3), 10, 10)
        font = style.font(7.0, True)
        fm = QFontMetrics(font)
        room = NODE_WIDTH / 2 - PORT_RADIUS - 18  # right of the output pin, inside the box
        text = fm.elidedText(", ".join(self.searched), Qt.ElideRight, int(room - 22))
        width = fm.horizontalAdvance(text) + 22
        tag = QRectF(NODE_WIDTH - 8 - width, NODE_HEIGHT - 7, width, 13)
        painter.setPen(Qt.NoPen)
        painter.setBrush(QBrush(style.SEARCH_COLOR))
        painter.drawRoundedRect(tag, 6, 6)
        painter.setPen(QPen(Qt.white, 1.4))  # the magnifier: a lens and its handle
        painter.setBrush(Qt.NoBrush)
        lens = QPointF(tag.left() + 8, tag.center().y() - 1)
        painter.drawEllipse(lens, 2.8, 2.8)
        painter.drawLine(lens + QPointF(2.0, 2.0), lens + QPointF(4.5, 4.5))
        painter.setFont(font)
        painter.drawText(tag.adjusted(15, 0, -4, 0), Qt.AlignLeft | Qt.AlignVCenter, text)

    def _paint_text(self, painter: QPainter, accent: Any) -> None:
        left, right = 14.0, NODE_WIDTH - 10.0
        name_font, small, small_bold = style.font(9.5, True), style.font(8.0), style.font(8.0, True)
        # line 1: name (left), type (right); the longer one is elided when both do not fit
        fm_small, fm_name = QFontMetrics(small), QFontMetrics(name_font)
        avail = right - left - 8
        name_w, type_w = float(fm_name.horizontalAdvance(self.name)), float(fm_small.horizontalAdvance(self.type_name))
        if name_w + type_w > avail:
            if name_w <= avail / 2:
                type_w = avail - name_w
            elif type_w <= avail / 2:
                name_w = avail - type_w
            else:
                name_w = type_w = avail / 2
        painter.setFont(small)
        painter.setPen(accent.darker(135) if not self.error else style.ERROR_COLOR)
        painter.drawText(QRectF(right - type_w - 1, 5, type_w + 1, 18), Qt.AlignRight | Qt.AlignVCenter,
                         fm_small.elidedText(self.type_name, Qt.ElideRight, int(type_w) + 1))
        painter.setFont(name_font)
        painter.setPen(style.TEXT)
        painter.drawText(QRectF(left, 4, name_w + 1, 20), Qt.AlignLeft | Qt.AlignVCenter,
                         fm_name.elidedText(self.name, Qt.ElideRight, int(name_w) + 1))
        # line 2: key parameters (left), output shape (right)
        shape = self.shape_text if not self.error else "error"
        fm_bold = QFontMetrics(small_bold)
        shape_w = fm_bold.horizontalAdvance(shape) if shape else 0
        if shape:
            painter.setFont(small_bold)
            painter.setPen(style.ERROR_COLOR if self.error else style.TEXT)
            painter.drawText(QRectF(right - shape_w - 1, 27, shape_w + 1, 18), Qt.AlignRight | Qt.AlignVCenter, shape)
        summary_w = right - left - shape_w - 8
        painter.setFont(small)
        painter.setPen(style.TEXT_MUTED)
        painter.drawText(QRectF(left, 27, summary_w, 18), Qt.AlignLeft | Qt.AlignVCenter,
                         fm_small.elidedText(self.summary, Qt.ElideRight, int(max(0, summary_w))))
