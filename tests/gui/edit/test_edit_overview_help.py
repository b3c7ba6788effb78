"""The EDIT tab's overview map (a ResNet-110-sized network is navigable from it) and its layer help
(NNC's reference text and paper link)."""
from __future__ import annotations

import os
import re
import time

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest

from nnconsole.app.edit.layer_help import help_html, reference_of
from nnconsole.app.edit.nnc_references import REFERENCES
from nnconsole.engine.layers import all_specs, defaults, get_spec
from nnconsole.engine.project.model import Layer, Project
from tests.gui.support import TEST_DATA
from tests.support.timing import budget

pytestmark = pytest.mark.gui

NNC_LAYERS = os.path.join(TEST_DATA, "nnc_reference", "layer_component")


def resnet110() -> Project:
    """Input, a stem convolution, 54 residual blocks of two 3x3 convolutions (ResNet-110's 108
    convolutions, the stem and the classifier: 385 layers), global pooling, Affine and the loss."""
    layers = [Layer(name="x", type="Input", params={**defaults("Input"), "shape": [3, 32, 32]})]

    def add(type_name: str, inputs, **params) -> str:
        name = f"{type_name}_{len(layers)}"
        layers.append(Layer(name=name, type=type_name, inputs=list(inputs), params={**defaults(type_name), **params}))
        return name

    h = add("ReLU", [add("Convolution", ["x"], outmaps=16, kernel=[3, 3], pad=[1, 1])])
    for _ in range(54):
        a = add("ReLU", [add("BatchNormalization", [add("Convolution", [h], outmaps=16, kernel=[3, 3], pad=[1, 1])])])
        b = add("BatchNormalization", [add("Convolution", [a], outmaps=16, kernel=[3, 3], pad=[1, 1])])
        h = add("ReLU", [add("Add2", [b, h])])
    out = add("Affine", [add("GlobalAveragePooling", [h])], out_shape=[10])
    layers.append(Layer(name="y", type="Input", params={**defaults("Input"), "shape": [1]}))
    add("SoftmaxCrossEntropy", [out, "y"])
    project = Project()
    project.network.layers = layers
    return project


@pytest.fixture
def resnet_page(qtbot):
    from nnconsole.app.document.project_document import ProjectDocument
    from nnconsole.app.edit.page import EditPage

    document = ProjectDocument(resnet110())
    started = time.perf_counter()
    page = EditPage(document, None)
    page.resize(1200, 800)
    qtbot.addWidget(page)
    page.show()
    qtbot.waitExposed(page)
    page.view.show_top()
    page.minimap.relayout()
    page.build_seconds = time.perf_counter() - started
    return page


@pytest.mark.slow  # building the 385-layer canvas takes about a second
def test_a_resnet_110_is_navigable_from_the_overview_map(resnet_page, qtbot):
    page = resnet_page
    assert len(page.document.network.layers) >= 380
    minimap = page.minimap
    assert minimap.isVisible()  # the network does not fit in the canvas
    assert minimap.geometry().right() <= page.view.geometry().width() and minimap.height() > 100
    last = page.scene.node(page.document.network.layers[-1].name)
    first = page.scene.node("x")
    assert page.view.mapToScene(page.view.viewport().rect()).boundingRect().intersects(first.sceneBoundingRect())
    # a click near the bottom of the map brings the loss into view
    QTest.mouseClick(minimap, Qt.LeftButton, Qt.NoModifier, QPoint(minimap.width() // 2, minimap.height() - 4))
    visible = page.view.mapToScene(page.view.viewport().rect()).boundingRect()
    assert visible.intersects(last.sceneBoundingRect()) and not visible.intersects(first.sceneBoundingRect())
    # dragging on the map moves the view along with the pointer
    centers = []
    QTest.mousePress(minimap, Qt.LeftButton, Qt.NoModifier, QPoint(minimap.width() // 2, minimap.height() - 4))
    for y in (minimap.height() * 3 // 4, minimap.height() // 2, minimap.height() // 4):
        QTest.mouseMove(minimap, QPoint(minimap.width() // 2, y))
        centers.append(page.view.mapToScene(page.view.viewport().rect().center()).y())
    QTest.mouseRelease(minimap, Qt.LeftButton, Qt.NoModifier, QPoint(minimap.width() // 2, minimap.height() // 4))
    assert centers[0] > centers[1] > centers[2]
    assert abs(centers[1] - page.scene.nodes_rect().center().y()) < page.scene.nodes_rect().height() * 0.05
    # the frame drawn on the map is the part the canvas shows
    frame = minimap.to_map(page.view.mapToScene(page.view.viewport().rect()).boundingRect())
    assert abs(frame.center().y() - minimap.height() // 4) < 6


@pytest.mark.slow  # building the 385-layer canvas takes about a second
def test_the_overview_map_hides_when_the_network_fits_and_when_turned_off(resnet_page, page):
    page.add_layer("Input")
    page.add_layer("Affine")
    page.minimap.relayout()
    assert not page.minimap.isVisible()  # two layers fit in the canvas
    action = resnet_page.edit_actions["minimap"]
    action.trigger()
    assert not action.isChecked() and not resnet_page.minimap.isVisible()
    action.trigger()
    assert resnet_page.minimap.isVisible()


@pytest.mark.slow  # building the 385-layer canvas takes about a second
def test_the_overview_map_paints_a_large_network_quickly(resnet_page):
    minimap = resnet_page.minimap
    started = time.perf_counter()
    for _ in range(10):
        minimap.grab()
    per_paint = (time.perf_counter() - started) / 10
    assert per_paint < budget(0.05), per_paint  # measured 6-11 ms for 385 layers on a loaded 2-core machine


def _nnc_reference(type_name: str) -> str:
    for category in os.listdir(NNC_LAYERS):
        path = os.path.join(NNC_LAYERS, category, type_name + ".txt")
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                m = re.search(r"^Reference=(.*)$", f.read(), re.M)
            return m.group(1).strip().replace("\\n", "\n") if m else ""
    return ""


def test_the_copied_references_are_nncs():
    names = {os.path.splitext(f)[0] for c in os.listdir(NNC_LAYERS) if os.path.isdir(os.path.join(NNC_LAYERS, c))
             for f in os.listdir(os.path.join(NNC_LAYERS, c))}
    expected = {n: _nnc_reference(n) for n in names if _nnc_reference(n)}
    assert REFERENCES == expected and len(expected) >= 30
    with_reference = [s.type for s in all_specs() if reference_of(s)]
    assert "BatchNormalization" in with_reference and len(with_reference) >= 25


def test_help_shows_the_doc_parameters_and_the_paper_link():
    text = help_html("BatchNormalization")
    assert get_spec("BatchNormalization").doc.split()[0] in text
    assert "<a href='https://arxiv.org/abs/1502.03167'>" in text and "Ioffe and Szegedy" in text
    assert "decay_rate" in text
    assert "Reference" not in help_html("Tanh")  # no paper in NNC's definition: no empty heading
    assert "not known" in help_html("NoSuchLayer<b>")  and "<b>" not in help_html("NoSuchLayer<b>")


def test_the_help_panel_follows_the_selection_and_the_palette(digits_page):
    page = digits_page
    page.select_layers(["relu1"])
    assert page.help.type_name == "ReLU" and "citeseerx" in page.help.toHtml()
    assert page.help.openExternalLinks()
    page.palette.tree.setCurrentItem(page.palette.item("BatchNormalization"))
    assert page.help.type_name == "BatchNormalization" and "arxiv.org/abs/1502.03167" in page.help.toHtml()
    assert page.side_tabs.tabText(2) == "Layer Help"
