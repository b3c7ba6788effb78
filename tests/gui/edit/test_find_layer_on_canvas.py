"""Find a layer on the canvas by name (issue 28 item 15): Ctrl+F puts the cursor in the toolbar's field, and
Enter selects the layer and centres the canvas on it (the palette's type search moved to Ctrl+K)."""
from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from nnconsole.app.edit.find_layer import best_match

pytestmark = pytest.mark.gui
SHOTS = "/work/shots/shell"


def test_best_match_prefers_exact_then_prefix_then_substring():
    names = ["conv10", "conv1", "relu1", "fc_conv"]
    assert best_match(names, "CONV1") == "conv1"
    assert best_match(names, "rel") == "relu1"
    assert best_match(names, "_con") == "fc_conv"
    assert best_match(names, "pool") is None and best_match(names, "  ") is None


def test_typing_a_name_selects_and_centres_that_layer(qtbot, digits_page):
    page = digits_page
    page.resize(1100, 600)
    page.view.zoom_reset()
    last = page.document.network.names()[-1]
    page.view.centerOn(page.scene.node(page.document.network.names()[0]).sceneBoundingRect().center())
    page.edit_actions["find_on_canvas"].trigger()
    assert page.find_field.hasFocus() or page.find_field is page.focusWidget()
    QTest.keyClicks(page.find_field, last.upper())
    QTest.keyClick(page.find_field, Qt.Key_Return)
    assert page.selected_layers() == [last]
    centre = page.view.mapToScene(page.view.viewport().rect().center())
    node = page.scene.node(last).sceneBoundingRect()
    assert abs(centre.y() - node.center().y()) < 2 and abs(centre.x() - node.center().x()) < 2
    page.grab().save(f"{SHOTS}/find_layer_after.png")
