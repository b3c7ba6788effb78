"""The network graph scene: node and edge items kept in step with the model, and the mouse
gestures that become edits (drag from an output pin to connect, finished moves).

The scene never changes the model: it emits ``connection_requested`` and ``items_moved`` and the
EDIT page turns them into undo commands through ``NetworkEditor`` (and ``CommentEditor`` for the notes).
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QPainterPath, QPen, QTransform
from PySide6.QtWidgets import QGraphicsPathItem, QGraphicsScene, QGraphicsSceneMouseEvent

from nnconsole.app.edit import layout, style
from nnconsole.app.edit.comment_item import CommentItem, CommentNotes
from nnconsole.app.edit.edge_item import EdgeItem, curve
from nnconsole.app.edit.edge_routes import Obstacles, Point
from nnconsole.app.edit.node_item import NodeItem, PortItem
from nnconsole.app.edit.repeat_frames import RepeatFrames
from nnconsole.app.edit.scopes import weight_sharers
from nnconsole.engine.layers import get_spec
from nnconsole.engine.project.model import Network


class NetworkScene(QGraphicsScene):
    """Nodes keyed by layer name, rebuilt from the model by ``sync``."""

    connection_requested = Signal(str, str, int)  # source, target, input pin (-1: the next free one)
    items_moved = Signal(object, object)  # {layer name: (x, y)}, {comment index: (x, y)} after a drag ends
    node_activated = Signal(str)  # a node was double-clicked
    comment_activated = Signal(int)  # a note was double-clicked (its index in Network.comments)

    def __init__(self, parent: Optional[object] = None) -> None:
        super().__init__(parent)
        self.setObjectName("network_scene")
        self._nodes: Dict[str, NodeItem] = {}
        self._edges: List[EdgeItem] = []
        self._press_positions: Dict[str, QPointF] = {}
        self._press_notes: Dict[int, QPointF] = {}
        self._drag_source: Optional[NodeItem] = None
        self._drag_path: Optional[QGraphicsPathItem] = None
        self.repeat_frames = RepeatFrames()  # a frame behind each repeat block's layers
        self.comment_notes = CommentNotes()  # the network's canvas notes (NNC's Comment)
        self._obstacles: Optional[Obstacles] = None  # node boxes in rows, for routing long edges; None: stale
        self.deferring_routes = False  # while sync moves every node: edges are rebuilt afterwards anyway

    # ---- model -> items -------------------------------------------------------------------------
    def sync(self, network: Network, info: object) -> None:
        """Make the items show ``network`` with inference results ``info`` (a NetworkInfo)."""
        positions = layout.effective_positions(network)
        sharers = weight_sharers(network)
        layers = {}
        for layer in network.layers:
            layers.setdefault(layer.name, layer)
        gone = [n for n in self._nodes if n not in layers]
        new = [n for n in layers if n not in self._nodes]
        if len(gone) == 1 and len(new) == 1:  # a rename: keep the item (and its selection)
            self._nodes[new[0]] = self._nodes.pop(gone[0])
            self._nodes[new[0]].name = new[0]
            gone = []
        for name in gone:
            self._remove_node(name)
        self.deferring_routes = True
        for name, layer in layers.items():
            node = self._nodes.get(name)
            if node is None:
                node = NodeItem(name)
                self._nodes[name] = node
                self.addItem(node)
            try:
                spec = get_spec(layer.type)
            except KeyError:
                spec = None
            node.set_layer(layer, spec, info.layers.get(name) if info is not None else None, sharers.get(name, ()))
            x, y = positions.get(name, (0.0, 0.0))
            if (node.pos().x(), node.pos().y()) != (x, y) and self.mouseGrabberItem() is not node:
                node.setPos(x, y)
        self.deferring_routes = False
        self.invalidate_routes()
        self._rebuild_edges(layers)
        self.repeat_frames.sync(self, network, info)
        self.comment_notes.sync(self, network.comments, positions)
        box = layout.bounding_box(positions)
        rect = QRectF(box[0], box[1], box[2] - box[0], box[3] - box[1]) if box is not None else QRectF()
        rect = rect.united(self.comment_notes.rect())  # a note far off stays reachable
        if not rect.isNull():
            self.setSceneRect(rect.adjusted(-600, -400, 600, 400))  # the view keeps its place (view.py)

    def _remove_node(self, name: str) -> None:
        node = self._nodes.pop(name)
        for edge in list(node.edges):
            self._drop_edge(edge)
        self.removeItem(node)

    def _drop_edge(self, edge: EdgeItem) -> None:
        for node in (edge.source, edge.target):
            if edge in node.edges:
                node.edges.remove(edge)
        if edge in self._edges:
            self._edges.remove(edge)
        if edge.scene() is self:
            self.removeItem(edge)

    def _rebuild_edges(self, layers: Dict[str, object]) -> None:
        selected = {edge.key for edge in self._edges if edge.isSelected()}
        for edge in list(self._edges):
            self._drop_edge(edge)
        for name, layer in layers.items():
            for index, source in enumerate(layer.inputs):
                if source in self._nodes and name in self._nodes:
                    edge = EdgeItem(self._nodes[source], self._nodes[name], index)
                    self._edges.append(edge)
                    edge.source.edges.append(edge)
                    edge.target.edges.append(edge)
                    self.addItem(edge)
                    edge.update_path()  # routed around the nodes now that it is in the scene
                    edge.setSelected(edge.key in selected)

    # ---- routes of long edges ---------------------------------------------------------------------
    def invalidate_routes(self) -> None:
        """Nodes moved: the rows the edges are routed through are computed again when next needed."""
        self._obstacles = None

    def route(self, source: str, target: str, start: Point, end: Point) -> Optional[List[Point]]:
        """The bends of an edge that jumps over rows of nodes (``edge_routes``), or None for the plain curve."""
        if self._obstacles is None:
            boxes = {}
            for name, node in self._nodes.items():
                r = node.mapRectToScene(node.box_rect())
                boxes[name] = (r.left(), r.top(), r.right(), r.bottom())
            self._obstacles = Obstacles(boxes)
        return self._obstacles.route(source, target, start, end)

    # ---- queries ------------------------------------------------------------------------------
    def node(self, name: str) -> Optional[NodeItem]:
        return self._nodes.get(name)

    def nodes(self) -> Dict[str, NodeItem]:
        return dict(self._nodes)

    def edges(self) -> List[EdgeItem]:
        return list(self._edges)

    def selected_names(self) -> List[str]:
        return [item.name for item in self.selectedItems() if isinstance(item, NodeItem)]

    def selected_edges(self) -> List[Tuple[str, int]]:
        return [item.key for item in self.selectedItems() if isinstance(item, EdgeItem)]

    def selected_comments(self) -> List[int]:
        """Indices (in Network.comments) of the selected notes."""
        return sorted(item.index for item in self.selectedItems() if isinstance(item, CommentItem))

    def comment_items(self) -> List[CommentItem]:
        return list(self.comment_notes.items)

    def select_names(self, names: Sequence[str]) -> None:
        self.blockSignals(True)
        try:
            self.clearSelection()
            for name in names:
                if name in self._nodes:
                    self._nodes[name].setSelected(True)
        finally:
            self.blockSignals(False)
        self.selectionChanged.emit()

    def nodes_rect(self) -> QRectF:
        rect = QRectF()
        for node in self._nodes.values():
            rect = rect.united(node.sceneBoundingRect())
        return rect

    # ---- gestures ------------------------------------------------------------------------------
    def _item_at(self, pos: QPointF, kinds: tuple) -> Optional[object]:
        for item in self.items(pos, Qt.IntersectsItemShape, Qt.DescendingOrder, QTransform()):
            if item is self._drag_path:
                continue
            if isinstance(item, kinds):
                return item
        return None

    def mousePressEvent(self, event: QGraphicsSceneMouseEvent) -> None:  # noqa: N802 - Qt override
        if event.button() == Qt.LeftButton:
            port = self._item_at(event.scenePos(), (PortItem,))
            if isinstance(port, PortItem) and port.kind == "out":
                self._start_connection(port.node)
                event.accept()
                return
        super().mousePressEvent(event)
        self._press_positions = {item.name: item.pos() for item in self.selectedItems() if isinstance(item, NodeItem)}
        self._press_notes = {item.index: item.pos() for item in self.selectedItems() if isinstance(item, CommentItem)}

    def mouseMoveEvent(self, event: QGraphicsSceneMouseEvent) -> None:  # noqa: N802 - Qt override
        if self._drag_source is not None:
            self._drag_path.setPath(curve(self._drag_source.output_anchor(), event.scenePos()))
            event.accept()
            return
        super().mouseMoveEvent(event)
        if self.repeat_frames.frames and event.buttons():
            self.repeat_frames.follow(self)  # block frames follow dragged nodes

    def mouseReleaseEvent(self, event: QGraphicsSceneMouseEvent) -> None:  # noqa: N802 - Qt override
        if self._drag_source is not None:
            self._finish_connection(event.scenePos())
            event.accept()
            return
        super().mouseReleaseEvent(event)
        moved = {}
        for name, before in self._press_positions.items():
            node = self._nodes.get(name)
            if node is not None and node.pos() != before:
                node.setPos(layout.snap(node.pos().x()), layout.snap(node.pos().y()))
                moved[name] = (node.pos().x(), node.pos().y())
        notes = {}
        for index, before in self._press_notes.items():
            if index < len(self.comment_notes.items) and self.comment_notes.items[index].pos() != before:
                item = self.comment_notes.items[index]
                item.setPos(layout.snap(item.pos().x()), layout.snap(item.pos().y()))
                notes[index] = (item.pos().x(), item.pos().y())
        self._press_positions, self._press_notes = {}, {}
        if moved or notes:
            self.items_moved.emit(moved, notes)  # one undo step for the whole drag

    def mouseDoubleClickEvent(self, event: QGraphicsSceneMouseEvent) -> None:  # noqa: N802 - Qt override
        item = self._item_at(event.scenePos(), (NodeItem, CommentItem))
        if isinstance(item, NodeItem):
            self.node_activated.emit(item.name)
            event.accept()
            return
        if isinstance(item, CommentItem):
            self.comment_activated.emit(item.index)
            event.accept()
            return
        super().mouseDoubleClickEvent(event)

    def _start_connection(self, node: NodeItem) -> None:
        self._drag_source = node
        self._drag_path = QGraphicsPathItem()
        self._drag_path.setPen(QPen(style.SELECTED_COLOR, 1.8, Qt.DashLine, Qt.RoundCap))
        self._drag_path.setZValue(5)
        self._drag_path.setPath(QPainterPath(node.output_anchor()))
        self.addItem(self._drag_path)

    def _finish_connection(self, pos: QPointF) -> None:
        source = self._drag_source
        self._drag_source = None
        if self._drag_path is not None:
            self.removeItem(self._drag_path)
            self._drag_path = None
        target = self._item_at(pos, (PortItem, NodeItem))
        if isinstance(target, PortItem):
            if target.kind != "in":
                return
            node, pin = target.node, target.index
        elif isinstance(target, NodeItem):
            node, pin = target, -1
        else:
            return
        if node is not source:
            self.connection_requested.emit(source.name, node.name, pin)
