"""What a user does in the EDIT tab, as test steps: real clicks, typing and drags (offscreen)."""
from __future__ import annotations

from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QLineEdit


def palette_double_click(page, type_name: str) -> str:
    """Double-click a layer type in the palette; return the name of the layer it added."""
    tree = page.palette.tree
    item = page.palette.item(type_name)
    tree.scrollToItem(item)
    before = set(page.document.network.names())  # the network shown (issue 17: Main or another)
    point = tree.visualItemRect(item).center()
    QTest.mouseClick(tree.viewport(), Qt.LeftButton, Qt.NoModifier, point)  # a double-click starts with a click
    QTest.mouseDClick(tree.viewport(), Qt.LeftButton, Qt.NoModifier, point)
    added = [n for n in page.document.network.names() if n not in before]
    assert len(added) == 1, f"double-clicking {type_name} added {added}"
    return added[0]


def type_into(page, object_name: str, text: str) -> QLineEdit:
    """Replace the text of a property field and press Enter, as a user would."""
    edit = page.properties.findChild(QLineEdit, object_name)
    assert edit is not None, f"no field {object_name} in the property panel"
    edit.setFocus()
    edit.selectAll()
    QTest.keyClicks(edit, text)
    QTest.keyClick(edit, Qt.Key_Return)
    return edit


def scene_point(page, scene_pos) -> QPoint:
    page.view.ensureVisible(scene_pos.x() - 5, scene_pos.y() - 5, 10, 10, 20, 20)
    return page.view.mapFromScene(scene_pos)


def drag_connect(page, source: str, target: str, pin: int = 0) -> None:
    """Drag from ``source``'s output pin to ``target``'s input pin ``pin`` on the canvas."""
    page.flush()
    src = page.scene.node(source)
    dst = page.scene.node(target)
    start = scene_point(page, src.output_anchor())
    end_scene = dst.input_anchor(pin)
    end = page.view.mapFromScene(end_scene)
    if not page.view.viewport().rect().contains(end):
        page.view.fit()
        start, end = page.view.mapFromScene(src.output_anchor()), page.view.mapFromScene(end_scene)
    viewport = page.view.viewport()
    QTest.mousePress(viewport, Qt.LeftButton, Qt.NoModifier, start)
    QTest.mouseMove(viewport, (start + end) / 2)
    QTest.mouseMove(viewport, end)
    QTest.mouseRelease(viewport, Qt.LeftButton, Qt.NoModifier, end)
