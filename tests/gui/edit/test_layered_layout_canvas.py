"""Imported NNC networks on the EDIT canvas (issue 28, item 13), measured on the scene's items: no two node
boxes closer than a gap, no edge path through a node box other than its own ends, no two pins overlapping,
repeat-block labels and frames clear of other nodes; Fit Network shows a 300-layer network whole, a wide
network opens with every column in view, dragging at a low zoom keeps the view where it was, and Auto
Layout is one undoable edit."""
from __future__ import annotations

from typing import Iterable, List, Tuple

import pytest
from PySide6.QtCore import QPoint, QPointF, QRectF, Qt
from PySide6.QtTest import QTest

from nnconsole.app.edit.node_item import PortItem
from nnconsole.engine.network.layered_layout import CLEARANCE
from tests.support.canvas_networks import import_sdcproj_project

pytestmark = pytest.mark.gui


@pytest.fixture
def open_sample(qtbot, tmp_path):
    """An EDIT page showing sample ``name`` imported from an NNC file."""
    from nnconsole.app.document.project_document import ProjectDocument
    from nnconsole.app.edit.page import EditPage

    def make(name: str):
        document = ProjectDocument()
        document.load(import_sdcproj_project(tmp_path, name))
        page = EditPage(document, None)
        page.resize(1200, 800)
        qtbot.addWidget(page)
        page.show()
        qtbot.waitExposed(page)
        page.flush()
        return page

    return make


def boxes(page) -> dict:
    return {name: node.mapRectToScene(node.box_rect()) for name, node in page.scene.nodes().items()}


def segments(path) -> Iterable[Tuple[QPointF, QPointF]]:
    """The straight pieces of a path (curves flattened by Qt)."""
    for polygon in path.toSubpathPolygons():
        points = [polygon.at(i) for i in range(polygon.size())]
        yield from zip(points, points[1:])


def crosses(a: QPointF, b: QPointF, rect: QRectF) -> bool:
    """Whether segment a-b meets the inside of ``rect`` (Liang-Barsky clipping)."""
    t0, t1 = 0.0, 1.0
    dx, dy = b.x() - a.x(), b.y() - a.y()
    for p, q in ((-dx, a.x() - rect.left()), (dx, rect.right() - a.x()), (-dy, a.y() - rect.top()),
                 (dy, rect.bottom() - a.y())):
        if p == 0:
            if q < 0:
                return False
            continue
        t = q / p
        if p < 0:
            t0 = max(t0, t)
        else:
            t1 = min(t1, t)
        if t0 > t1:
            return False
    return True


def edge_crossings(page) -> List[Tuple[str, str, str]]:
    """(source, target, node) for every edge piece that runs through a node box other than its ends."""
    found = []
    node_boxes = boxes(page)
    for edge in page.scene.edges():
        path = edge.mapToScene(edge.path())
        bounds = path.boundingRect()
        for name, box in node_boxes.items():
            if name in (edge.source.name, edge.target.name) or not bounds.intersects(box):
                continue
            inner = box.adjusted(1, 1, -1, -1)
            if any(crosses(a, b, inner) for a, b in segments(path)):
                found.append((edge.source.name, edge.target.name, name))
    return found


def touching_boxes(page, gap: float) -> List[Tuple[str, str]]:
    items = sorted(boxes(page).items(), key=lambda item: item[1].left())
    out = []
    half = gap / 2
    for i, (a, ra) in enumerate(items):
        grown = ra.adjusted(-half, -half, half, half)
        for b, rb in items[i + 1:]:
            if rb.left() > grown.right():
                break
            if grown.intersects(rb.adjusted(-half, -half, half, half)):
                out.append((a, b))
    return out


def overlapping_pins(page) -> List[Tuple[str, str]]:
    pins = [(item.node.name, item.sceneBoundingRect()) for item in page.scene.items() if isinstance(item, PortItem)]
    pins.sort(key=lambda p: p[1].left())
    out = []
    for i, (a, ra) in enumerate(pins):
        for b, rb in pins[i + 1:]:
            if rb.left() >= ra.right():
                break
            if ra.intersects(rb):
                out.append((a, b))
    return out


@pytest.mark.parametrize("name", ["repeat", "lstm", "inception"])
def test_imported_networks_have_apart_boxes_pins_and_edges_around_nodes(open_sample, name):
    page = open_sample(name)
    assert touching_boxes(page, CLEARANCE) == []
    assert overlapping_pins(page) == []
    assert edge_crossings(page) == []


@pytest.mark.slow  # 305 layers: about 2 s to import and build the canvas on a loaded machine
def test_a_300_layer_resnet_has_apart_boxes_and_skip_edges_around_nodes_and_fits(open_sample, qtbot):
    page = open_sample("resnet")
    assert len(page.scene.nodes()) >= 300
    assert touching_boxes(page, CLEARANCE) == []
    assert overlapping_pins(page) == []
    assert edge_crossings(page) == []
    page.view.fit()
    qtbot.wait(50)  # scroll bars come and go with the zoom: measure what the user then sees
    visible = page.view.mapToScene(page.view.viewport().rect()).boundingRect()
    nodes = page.scene.nodes_rect()
    assert visible.contains(nodes), (visible, nodes, page.view.zoom())
    assert page.view.zoom() < 0.15  # the old floor: the network is 30,000 units tall


def test_repeat_labels_and_frames_keep_off_other_nodes(open_sample):
    page = open_sample("repeat")
    frames = page.scene.repeat_frames
    assert len(frames.labels) == 3
    node_boxes = boxes(page)
    for start, label in frames.labels.items():
        rect = label.sceneBoundingRect()
        assert [n for n, box in node_boxes.items() if box.intersects(rect)] == [], start
        assert frames.frames[start].rect().contains(rect)  # inside its frame: never over the next column
    members = {start: set(names) for start, names in frames._members.items()}
    for start, frame in frames.frames.items():
        outside = [n for n, box in node_boxes.items() if n not in members[start] and frame.rect().intersects(box)]
        assert outside == [], start


def test_a_wide_network_opens_with_every_column_in_view(open_sample):
    page = open_sample("lstm")
    page.view.show_top()  # how a project opens (EditPage._reloaded)
    visible = page.view.mapToScene(page.view.viewport().rect()).boundingRect()
    nodes = page.scene.nodes_rect()
    assert visible.left() <= nodes.left() and visible.right() >= nodes.right(), (visible, nodes)
    top = min(box.top() for box in boxes(page).values())
    assert visible.top() <= top


def test_a_network_loaded_while_the_canvas_is_hidden_opens_whole_width_when_shown(qtbot, tmp_path):
    from nnconsole.app.document.project_document import ProjectDocument
    from nnconsole.app.edit.page import EditPage

    document = ProjectDocument()
    page = EditPage(document, None)
    page.resize(1200, 800)
    qtbot.addWidget(page)
    document.load(import_sdcproj_project(tmp_path, "lstm"))  # EDIT opens it while another tab is in front
    page.show()
    qtbot.waitExposed(page)

    def every_column_in_view():
        visible = page.view.mapToScene(page.view.viewport().rect()).boundingRect()
        nodes = page.scene.nodes_rect()
        assert visible.left() <= nodes.left() and visible.right() >= nodes.right(), (visible, nodes)
        # ... and no smaller than that needs: the hidden view's size did not count
        wanted = min(1.0, page.view.viewport().width() / (nodes.width() + 60))
        assert page.view.zoom() >= 0.9 * wanted, (page.view.zoom(), wanted)

    qtbot.waitUntil(every_column_in_view, timeout=3000)


def test_dragging_a_node_at_a_low_zoom_keeps_the_view_still(open_sample, qtbot):
    page = open_sample("inception")
    view = page.view
    view.set_zoom(0.1)
    view.centerOn(page.scene.nodes_rect().center())
    node = page.scene.node("loss")  # the lowest node: dragging it further down grows the network
    before = view.mapToScene(view.viewport().rect().center())
    start = view.mapFromScene(node.mapToScene(node.box_rect().center()))
    end = start + QPoint(40, 30)
    viewport = view.viewport()
    QTest.mousePress(viewport, Qt.LeftButton, Qt.NoModifier, start)
    for k in range(1, 6):
        QTest.mouseMove(viewport, start + (end - start) * (k / 5))
    QTest.mouseRelease(viewport, Qt.LeftButton, Qt.NoModifier, end)
    page.flush()
    qtbot.wait(20)
    moved = page.document.network.layer("loss").position
    assert moved[1] > page.document.network.layer("fc").position[1] + 100  # the drag went through
    after = view.mapToScene(view.viewport().rect().center())
    pixel = 1 / view.zoom()  # scroll positions are whole pixels
    assert abs(after.x() - before.x()) <= 1.5 * pixel and abs(after.y() - before.y()) <= 1.5 * pixel, \
        (before, after)


def test_auto_layout_is_one_undoable_edit_that_parts_touching_boxes(open_sample):
    page = open_sample("inception")
    document = page.document
    document.set_layer_field("m0_3r", "position", tuple(document.network.layer("m0_1x1").position))
    page.flush()
    assert touching_boxes(page, CLEARANCE) != []
    count = document.undo_stack.count()
    page.edit_actions["auto_layout"].trigger()
    page.flush()
    assert document.undo_stack.count() == count + 1
    assert touching_boxes(page, CLEARANCE) == [] and edge_crossings(page) == []
    document.undo_stack.undo()
    page.flush()
    assert document.network.layer("m0_3r").position == document.network.layer("m0_1x1").position
