"""Canvas gestures and editing actions: delete with edges, copy/paste, moves, rubber band, zoom,
drops from the palette, connection rules, auto layout, and the issues/statistics views."""
from __future__ import annotations

import pytest
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt
from PySide6.QtGui import QDragEnterEvent, QDropEvent, QWheelEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from nnconsole.app.edit import layout
from nnconsole.app.edit.palette import MIME_LAYER_TYPE
from tests.gui.support import drag_connect, scene_point
pytestmark = pytest.mark.gui


def net(page):
    return page.document.project.network


def test_delete_takes_connections_along_in_one_undo_step(digits_page):
    page = digits_page
    before = page.document.project.copy()
    page.select_layers(["conv2"])
    page.edit_actions["delete"].trigger()
    assert "conv2" not in net(page).names() and net(page).layer("relu2").inputs == []
    assert page.scene.node("conv2") is None
    assert not [e for e in page.scene.edges() if e.target.name == "relu2"]
    assert page.document.undo_stack.count() == 1
    page.document.undo_stack.undo()
    assert page.document.project == before


def test_selected_edge_is_deleted_alone(digits_page):
    page = digits_page
    edge = next(e for e in page.scene.edges() if e.key == ("loss", 1))
    page.scene.clearSelection()
    edge.setSelected(True)
    page.delete_selected()
    assert net(page).layer("loss").inputs == ["fc2"] and "y" in net(page).names()


def test_copy_paste_keeps_inner_connections_and_renames(digits_page):
    page = digits_page
    page.select_layers(["conv1", "relu1"])
    page.edit_actions["copy"].trigger()
    page.edit_actions["paste"].trigger()
    network = net(page)
    assert network.layer("conv1_2").inputs == []  # x was not copied
    assert network.layer("relu1_2").inputs == ["conv1_2"]
    assert network.layer("conv1_2").params == network.layer("conv1").params
    assert network.layer("conv1_2").initializers == network.layer("conv1").initializers
    a, b = network.layer("conv1").position, network.layer("conv1_2").position
    assert (b[0] - a[0], b[1] - a[1]) == (40.0, 40.0)
    assert sorted(page.selected_layers()) == ["conv1_2", "relu1_2"]
    page.paste()  # a second paste lands beside the first, not on it
    assert network.layer("conv1_3").position != b
    page.document.undo_stack.undo()
    page.document.undo_stack.undo()
    assert "conv1_2" not in network.names()
    page.select_layers(["fc2"])
    page.edit_actions["cut"].trigger()
    assert "fc2" not in network.names()
    assert page.paste() == ["fc2"]


def test_dragging_nodes_moves_them_as_one_undoable_step(digits_page):
    page = digits_page
    page.view.zoom_reset()
    node = page.scene.node("conv1")
    old = net(page).layer("conv1").position
    start = scene_point(page, node.sceneBoundingRect().center())
    viewport = page.view.viewport()
    QTest.mousePress(viewport, Qt.LeftButton, Qt.NoModifier, start)
    for step in range(1, 5):
        QTest.mouseMove(viewport, start + QPoint(step * 20, step * 3))
    QTest.mouseRelease(viewport, Qt.LeftButton, Qt.NoModifier, start + QPoint(80, 12))
    new = net(page).layer("conv1").position
    assert new == (old[0] + 80, old[1] + 10)  # snapped to the 10-unit grid
    assert node.pos() == QPointF(*new)
    page.document.undo_stack.undo()
    page.flush()
    assert net(page).layer("conv1").position == old and node.pos() == QPointF(*old)


def test_rubber_band_selects_the_nodes_it_touches(digits_page):
    page = digits_page
    page.view.zoom_reset()
    a = page.scene.node("conv1").sceneBoundingRect()
    b = page.scene.node("relu1").sceneBoundingRect()
    start = scene_point(page, QPointF(a.right() + 60, a.top() + 10))
    end = page.view.mapFromScene(QPointF(b.center().x(), b.center().y()))
    viewport = page.view.viewport()
    QTest.mousePress(viewport, Qt.LeftButton, Qt.NoModifier, start)
    QTest.mouseMove(viewport, (start + end) / 2)
    QTest.mouseMove(viewport, end)
    QTest.mouseRelease(viewport, Qt.LeftButton, Qt.NoModifier, end)
    assert sorted(page.selected_layers()) == ["conv1", "relu1"]


def test_connection_rules(digits_page):
    page = digits_page
    stack = page.document.undo_stack
    drag_connect(page, "relu3", "conv1")  # conv1 feeds relu3: a cycle
    assert net(page).layer("conv1").inputs == ["x"] and stack.count() == 0
    assert "cycle" in page.last_message
    drag_connect(page, "x", "relu2")  # a single-input layer: the new connection replaces the old
    assert net(page).layer("relu2").inputs == ["x"] and stack.count() == 1
    drag_connect(page, "relu1", "y")  # Input layers take no inputs
    assert net(page).layer("y").inputs == [] and "takes no inputs" in page.last_message
    drag_connect(page, "relu3", "loss", pin=1)  # a chosen pin of a two-input layer is replaced
    assert net(page).layer("loss").inputs == ["fc2", "relu3"]
    stack.undo()
    stack.undo()
    assert net(page).layer("relu2").inputs == ["conv2"] and net(page).layer("loss").inputs == ["fc2", "y"]


def test_zoom_actions_wheel_and_fit(digits_page):
    page = digits_page
    view = page.view
    view.zoom_reset()
    page.edit_actions["zoom_in"].trigger()
    assert view.zoom() == pytest.approx(1.2)
    page.edit_actions["zoom_out"].trigger()
    page.edit_actions["zoom_out"].trigger()
    assert view.zoom() == pytest.approx(1 / 1.2)
    center = QPointF(view.viewport().rect().center())
    wheel = QWheelEvent(center, QPointF(view.viewport().mapToGlobal(center.toPoint())), QPoint(), QPoint(0, 120),
                        Qt.NoButton, Qt.ControlModifier, Qt.NoScrollPhase, False)
    QApplication.sendEvent(view.viewport(), wheel)
    assert view.zoom() == pytest.approx(1.0)
    page.edit_actions["fit"].trigger()
    visible = view.mapToScene(view.viewport().rect()).boundingRect()
    assert visible.contains(page.scene.nodes_rect())
    assert page.zoom_label.text() == f"{view.zoom() * 100:.0f}%"


def test_dropping_a_palette_layer_places_it_there(page):
    view = page.view
    mime = QMimeData()
    mime.setData(MIME_LAYER_TYPE, b"Convolution")
    point = QPointF(view.viewport().rect().center())
    scene_pos = view.mapToScene(point.toPoint())
    enter = QDragEnterEvent(point.toPoint(), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    QApplication.sendEvent(view.viewport(), enter)  # Qt delivers a drop only to the widget that accepted the drag
    assert enter.isAccepted()
    QApplication.sendEvent(view.viewport(), QDropEvent(point, Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier))
    layer = net(page).layer("Convolution")
    assert layer.position == (round(scene_pos.x() / 10) * 10.0, round(scene_pos.y() / 10) * 10.0)
    assert page.selected_layers() == ["Convolution"]


def test_auto_layout_puts_the_label_beside_the_prediction(digits_page):
    page = digits_page
    page.document.set_layer_field("y", "position", (0.0, 800.0))  # in the main column, as a user might drop it
    page.edit_actions["auto_layout"].trigger()
    positions = {layer.name: layer.position for layer in net(page).layers}
    assert positions["y"][1] == positions["fc2"][1] and positions["y"][0] > positions["fc2"][0]
    assert positions["loss"] == (positions["fc2"][0], positions["fc2"][1] + layout.AUTO_ROW)
    assert {p[0] for n, p in positions.items() if n != "y"} == {0.0}  # the main chain stays straight
    assert page.document.undo_stack.count() == 1


def test_palette_search_filters_by_name_and_group(page):
    from nnconsole.engine.layers import registry

    page.palette.search.setText("pool")
    expected = [s.type for s in registry.all_specs() if "pool" in s.type.lower() or "pool" in s.group.lower()]
    assert page.palette.visible_types() == expected  # palette order, from the registry
    assert {"MaxPooling", "AveragePooling", "GlobalAveragePooling", "Unpooling"} <= set(expected)
    assert "Affine" not in expected
    page.palette.search.setText("loss")
    assert "HuberLoss" in page.palette.visible_types() and "SquaredError" in page.palette.visible_types()
    page.palette.search.setText("")
    assert len(page.palette.visible_types()) > 30


def test_statistics_and_issues_select_layers(digits_page):
    page = digits_page
    rows = {row.name: row for row in page.statistics.chart.rows}
    assert (rows["conv2"].n_params, rows["conv2"].macs, rows["conv2"].output_size) == (4640, 73728, 512)
    assert page.statistics.totals["n_params"].text() == "13,706"
    assert page.statistics.totals["macs"].text() == "91,776"
    chart = page.statistics.chart
    chart.resize(420, chart.sizeHint().height())
    row_y = 26 + 24 * [r.name for r in chart.rows].index("fc1") + 12
    QTest.mouseClick(chart, Qt.LeftButton, Qt.NoModifier, QPoint(50, row_y))
    assert page.selected_layers() == ["fc1"]
    page.editor.remove(["pool2"])
    page.flush()
    assert [i.layer for i in page.issues.issues] == ["fc1"]
    page.issues.list.itemClicked.emit(page.issues.list.topLevelItem(0), 0)
    assert page.selected_layers() == ["fc1"]
    assert page.statistics.totals["n_params"].text() == f"{page.info.total_params:,}"
