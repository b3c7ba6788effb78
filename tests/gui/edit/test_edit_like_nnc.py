"""Editing like NNC (issue 19): a layer added while one is selected goes into the chain, a layer
dropped on a link goes into that link; Escape reverts a field; Ctrl+Z after a field edit undoes the
model change and the field shows it."""
from __future__ import annotations

import pytest
from PySide6.QtCore import QMimeData, QPointF, Qt
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QLineEdit

from tests.gui.support import palette_double_click, type_into
from nnconsole.app.edit.palette import MIME_LAYER_TYPE

pytestmark = pytest.mark.gui


def net(page):
    return page.document.network


def test_a_layer_added_with_a_layer_selected_goes_into_the_chain(digits_page):
    page = digits_page
    page.select_layers(["relu3"])
    name = palette_double_click(page, "Dropout")
    assert net(page).layer(name).inputs == ["relu3"]
    assert net(page).layer("fc2").inputs == [name]  # fc2 now reads the new layer
    assert net(page).names().index(name) == net(page).names().index("relu3") + 1
    assert net(page).layer(name).position == (0.0, 720.0)  # where fc2 was; the rest moved a row down
    assert net(page).layer("fc2").position == (0.0, 800.0)
    assert net(page).layer("loss").position == (0.0, 880.0) and net(page).layer("y").position == (260.0, 800.0)
    assert net(page).layer("relu1").position == (0.0, 160.0)  # above: not moved
    page.document.undo_stack.undo()  # one step
    assert name not in net(page).names() and net(page).layer("fc2").inputs == ["relu3"]
    assert net(page).layer("fc2").position == (0.0, 720.0)


def test_a_loss_added_below_the_selected_layer_only_reads_it(digits_page):
    page = digits_page
    page.select_layers(["fc2"])
    name = palette_double_click(page, "SquaredError")
    assert net(page).layer(name).inputs == ["fc2"]
    assert net(page).layer("loss").inputs == ["fc2", "y"]


def _drop(page, type_name: str, scene_pos: QPointF) -> None:
    view = page.view
    view.centerOn(scene_pos)
    point = QPointF(view.mapFromScene(scene_pos))
    mime = QMimeData()
    mime.setData(MIME_LAYER_TYPE, type_name.encode())
    enter = QDragEnterEvent(point.toPoint(), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    QApplication.sendEvent(view.viewport(), enter)
    assert enter.isAccepted()
    QApplication.sendEvent(view.viewport(), QDropEvent(point, Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier))


def test_a_layer_dropped_on_a_link_goes_into_that_link(digits_page):
    page = digits_page
    page.flush()
    edge = next(e for e in page.scene.edges() if e.key == ("relu2", 0))  # conv2 -> relu2
    _drop(page, "BatchNormalization", edge.path().pointAtPercent(0.5))
    added = [n for n in net(page).names() if n.startswith("BatchNormalization")]
    assert added == ["BatchNormalization"]
    assert net(page).layer("BatchNormalization").inputs == ["conv2"]
    assert net(page).layer("relu2").inputs == ["BatchNormalization"]
    page.document.undo_stack.undo()
    assert net(page).layer("relu2").inputs == ["conv2"] and "BatchNormalization" not in net(page).names()


def test_a_layer_dropped_beside_the_links_is_only_placed(digits_page):
    page = digits_page
    page.flush()
    _drop(page, "ReLU", QPointF(900.0, 300.0))
    assert net(page).layer("ReLU").inputs == [] and net(page).layer("relu2").inputs == ["conv2"]


@pytest.fixture
def digits_window(window, template_project, qtbot):
    window.show()
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=2000)  # shortcuts need the active window
    assert window.files.open_path(template_project)
    window.edit_page.select_layers(["fc1"])
    return window


def _field(window, name: str) -> QLineEdit:
    edit = window.edit_page.properties.findChild(QLineEdit, name)
    assert edit is not None
    return edit


def test_ctrl_z_after_a_field_edit_undoes_the_model_and_the_field_shows_it(digits_window, qtbot):
    page = digits_window.edit_page
    before = page.document.network.layer("fc1").params.get("out_shape")
    old_text = _field(digits_window, "param_out_shape").text()
    edit = type_into(page, "param_out_shape", "32")  # Enter commits: one step on the document's stack
    assert page.document.network.layer("fc1").params["out_shape"] != before
    assert edit.hasFocus()
    QTest.keyClick(edit, Qt.Key_Z, Qt.ControlModifier)  # focus still in the field
    page.flush()
    assert page.document.network.layer("fc1").params.get("out_shape") == before
    assert _field(digits_window, "param_out_shape").text() == old_text
    QTest.keyClick(_field(digits_window, "param_out_shape"), Qt.Key_Z, Qt.ControlModifier | Qt.ShiftModifier)
    page.flush()
    assert _field(digits_window, "param_out_shape").text() == "32"
    assert page.document.network.layer("fc1").params["out_shape"] != before


def test_escape_reverts_a_field_being_edited(digits_window):
    page = digits_window.edit_page
    before = page.document.network.layer("fc1").params.get("out_shape")
    edit = _field(digits_window, "param_out_shape")
    old_text = edit.text()
    edit.setFocus()
    edit.selectAll()
    QTest.keyClicks(edit, "77")
    assert edit.text() == "77"
    QTest.keyClick(edit, Qt.Key_Escape)
    assert edit.text() == old_text
    page.view.setFocus()  # leaving the field applies nothing
    page.flush()
    assert page.document.network.layer("fc1").params.get("out_shape") == before
    assert not page.document.modified


def test_ctrl_z_during_an_uncommitted_edit_reverts_it_and_keeps_the_document(digits_window):
    page = digits_window.edit_page
    type_into(page, "param_out_shape", "32")
    edit = _field(digits_window, "param_out_shape")
    QTest.keyClicks(edit, "5")
    QTest.keyClick(edit, Qt.Key_Z, Qt.ControlModifier)
    assert edit.text() == "32" and page.document.network.layer("fc1").params["out_shape"] in (32, [32])
