"""Find a layer on the EDIT canvas by name: select it and centre the view on it (Edit > Find Layer, Ctrl+F).

NNC's networks reach hundreds of layers; the palette's search finds layer *types*, this finds the layers of
the network shown. The field in the canvas toolbar completes the names as they are typed; Enter selects the
best match (the exact name, else the first name starting with the text, else the first containing it,
ignoring case) and centres the canvas on it.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

from PySide6.QtCore import QStringListModel, Qt
from PySide6.QtWidgets import QCompleter, QLineEdit, QWidget


def best_match(names: Sequence[str], text: str) -> Optional[str]:
    """The layer name ``text`` means: exact, then prefix, then substring, case ignored; None when none."""
    wanted = text.strip().lower()
    if not wanted:
        return None
    lowered = [(n, n.lower()) for n in names]
    for test in (lambda n: n == wanted, lambda n: n.startswith(wanted), lambda n: wanted in n):
        for name, low in lowered:
            if test(low):
                return name
    return None


def show_layer(page: Any, name: str) -> bool:
    """Select layer ``name`` alone on ``page``'s canvas and centre the view on it."""
    node = page.scene.node(name)
    if node is None:
        return False
    page.scene.select_names([name])
    page.view.centerOn(node.sceneBoundingRect().center())
    return True


class FindLayerField(QLineEdit):
    """The canvas toolbar's 'Find layer' field, completing the shown network's layer names."""

    def __init__(self, page: Any, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.page = page
        self.setObjectName("find_layer_on_canvas")
        self.setPlaceholderText("Find layer (Ctrl+F)")
        self.setClearButtonEnabled(True)
        self.setMaximumWidth(220)
        self.setToolTip("Type a layer's name and press Enter: it is selected and the canvas centred on it")
        self.names = QStringListModel(self)
        completer = QCompleter(self.names, self)
        completer.setCaseSensitivity(Qt.CaseInsensitive)
        completer.setFilterMode(Qt.MatchContains)
        completer.activated.connect(self.find)
        self.setCompleter(completer)
        self.returnPressed.connect(lambda: self.find(self.text()))
        page.document.network_changed.connect(self.refresh_names)
        self.refresh_names()

    def refresh_names(self) -> None:
        self.names.setStringList(list(self.page.document.network.names()))

    def layer_names(self) -> List[str]:
        return list(self.names.stringList())

    def find(self, text: str) -> Optional[str]:
        """Show the layer ``text`` names; says so in the field's style when there is none."""
        name = best_match(self.page.document.network.names(), text)
        found = name is not None and show_layer(self.page, name)
        self.setStyleSheet("" if found else "QLineEdit { border: 1px solid #c62828; }")
        if found:
            self.page.view.setFocus()
        return name if found else None

    def start(self) -> None:
        """Ctrl+F: put the cursor in the field, its text selected."""
        self.setFocus()
        self.selectAll()
