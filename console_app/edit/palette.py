"""The layer palette: the registry's layer types grouped as in NNC, with a search box.

Double-click (or Enter) asks for a layer with ``layer_activated``; dragging a type onto the canvas
carries it as ``MIME_LAYER_TYPE``.
"""
from __future__ import annotations

from typing import Any, List, Optional

from PySide6.QtCore import QMimeData, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QDrag, QFont, QIcon, QPainter, QPixmap
from PySide6.QtWidgets import QAbstractItemView, QLineEdit, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from nnconsole.app.edit import style
from nnconsole.engine.layers import groups

MIME_LAYER_TYPE = "application/x-nnconsole-layer-type"
TYPE_ROLE = Qt.UserRole + 1


def _swatch(group: str) -> QIcon:
    fill, accent = style.group_colors(group)
    pix = QPixmap(12, 12)
    pix.fill(Qt.transparent)
    painter = QPainter(pix)
    painter.setRenderHint(QPainter.Antialiasing)
    painter.setPen(accent)
    painter.setBrush(fill)
    painter.drawRoundedRect(1, 1, 10, 10, 3, 3)
    painter.end()
    return QIcon(pix)


class _PaletteTree(QTreeWidget):
    """A tree whose layer rows drag out as MIME_LAYER_TYPE."""

    def mimeData(self, items: List[QTreeWidgetItem]) -> QMimeData:  # noqa: N802 - Qt override
        mime = QMimeData()
        types = [item.data(0, TYPE_ROLE) for item in items if item.data(0, TYPE_ROLE)]
        if types:
            mime.setData(MIME_LAYER_TYPE, types[0].encode("utf-8"))
            mime.setText(types[0])
        return mime

    def mimeTypes(self) -> List[str]:  # noqa: N802 - Qt override
        return [MIME_LAYER_TYPE]

    def startDrag(self, actions: Any) -> None:  # noqa: N802 - Qt override
        item = self.currentItem()
        if item is None or not item.data(0, TYPE_ROLE):
            return
        drag = QDrag(self)
        drag.setMimeData(self.mimeData([item]))
        drag.exec(Qt.CopyAction)


class LayerPalette(QWidget):
    """Search box over a tree of layer types grouped like NNC's."""

    layer_activated = Signal(str)  # the user asked for a layer of this type

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("layer_palette")
        self.search = QLineEdit(self)
        self.search.setObjectName("palette_search")
        self.search.setPlaceholderText("Search layers…")
        self.search.setClearButtonEnabled(True)
        self.tree = _PaletteTree(self)
        self.tree.setObjectName("palette_tree")
        self.tree.setHeaderHidden(True)
        self.tree.setRootIsDecorated(True)
        self.tree.setIndentation(14)
        self.tree.setDragEnabled(True)
        self.tree.setDragDropMode(QAbstractItemView.DragOnly)
        self.tree.setSelectionMode(QAbstractItemView.SingleSelection)
        box = QVBoxLayout(self)
        box.setContentsMargins(6, 6, 0, 6)
        box.setSpacing(6)
        box.addWidget(self.search)
        box.addWidget(self.tree)
        self._items: dict = {}
        self._populate()
        self.search.textChanged.connect(self.filter)
        self.search.returnPressed.connect(self._activate_first_visible)
        self.tree.itemActivated.connect(self._activated)

    def _populate(self) -> None:
        bold = QFont()
        bold.setBold(True)
        for group, specs in groups().items():
            top = QTreeWidgetItem([group])
            top.setFont(0, bold)
            top.setFlags(Qt.ItemIsEnabled)
            top.setForeground(0, QBrush(QColor("#3b4652")))
            self.tree.addTopLevelItem(top)
            icon = _swatch(group)
            for spec in specs:
                child = QTreeWidgetItem([spec.type])
                child.setData(0, TYPE_ROLE, spec.type)
                child.setIcon(0, icon)
                child.setToolTip(0, f"<b>{spec.type}</b><br>{spec.doc}")
                child.setFlags(Qt.ItemIsEnabled | Qt.ItemIsSelectable | Qt.ItemIsDragEnabled)
                top.addChild(child)
                self._items[spec.type] = child
            top.setExpanded(True)

    def item(self, type_name: str) -> QTreeWidgetItem:
        return self._items[type_name]

    def visible_types(self) -> List[str]:
        return [name for name, item in self._items.items() if not item.isHidden()]

    def filter(self, text: str) -> None:
        """Show the layer types (and groups) whose name, group or description contains ``text``."""
        needle = text.strip().lower()
        for i in range(self.tree.topLevelItemCount()):
            top = self.tree.topLevelItem(i)
            group_match = needle in top.text(0).lower()
            shown = 0
            for j in range(top.childCount()):
                child = top.child(j)
                match = not needle or group_match or needle in child.text(0).lower()
                child.setHidden(not match)
                shown += match
            top.setHidden(shown == 0)
            top.setExpanded(True)

    def _activate_first_visible(self) -> None:
        visible = self.visible_types()
        if visible:
            self.layer_activated.emit(visible[0])

    def _activated(self, item: QTreeWidgetItem, column: int = 0) -> None:
        type_name = item.data(0, TYPE_ROLE)
        if type_name:
            self.layer_activated.emit(type_name)
