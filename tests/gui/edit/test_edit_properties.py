"""The property panel: typed editors, refused values explained with the old value kept, undo."""
from __future__ import annotations

import pytest
from PySide6.QtWidgets import QCheckBox, QComboBox, QLabel

from tests.gui.support import type_into
from nnconsole.engine.project.model import Initializer

pytestmark = pytest.mark.gui


@pytest.fixture
def conv(digits_page):
    digits_page.select_layers(["conv1"])
    return digits_page


def layer(page, name):
    return page.document.project.network.layer(name)


def test_invalid_value_is_refused_and_explained_then_a_valid_one_applies(conv):
    stack = conv.document.undo_stack
    edit = type_into(conv, "param_outmaps", "0")
    field = conv.properties.field("param:outmaps")
    assert "outmaps must be an integer >= 1" in field.error_text()
    assert field.error.isVisible() and "kept 16" in field.error.text()
    assert edit.text() == "16" and layer(conv, "conv1").params["outmaps"] == 16
    assert stack.count() == 0 and not conv.document.modified

    type_into(conv, "param_kernel", "3, x")
    assert "kernel must be a list of" in conv.properties.field("param:kernel").error_text()
    assert layer(conv, "conv1").params["kernel"] == [3, 3]

    type_into(conv, "param_outmaps", "8")
    assert field.error_text() == "" and not field.error.isVisible()
    assert layer(conv, "conv1").params["outmaps"] == 8
    assert conv.scene.node("conv1").shape_text == "8×8×8"
    assert conv.findChild(QLabel, "prop_output").text() == "8×8×8"
    assert stack.count() == 1 and conv.document.modified
    stack.undo()
    conv.flush()
    assert layer(conv, "conv1").params["outmaps"] == 16
    assert conv.properties.field("param:outmaps").edit.text() == "16"  # the panel follows undo


def test_shape_errors_are_drawn_red_listed_and_explained(conv):
    type_into(conv, "param_kernel", "11, 11")  # a valid value, but larger than the padded 10x10 input
    node = conv.scene.node("conv1")
    assert node.error and "conv1" in [i.layer for i in conv.issues.issues if i.severity == "error"]
    assert node.error in node.toolTip()
    assert conv.findChild(QLabel, "prop_error").text() == node.error
    assert "error" in conv.totals.text()
    assert conv.scene.node("relu1").error is None  # downstream layers are not blamed
    conv.document.undo_stack.undo()
    conv.flush()
    assert node.error is None and not conv.issues.issues


def test_enum_bool_and_float_editors(digits_page, qtbot):
    page = digits_page
    page.select_layers(["conv1"])
    with_bias = page.properties.findChild(QCheckBox, "param_with_bias")
    assert page.statistics.totals["n_params"].text() == "13,706"
    with_bias.click()
    assert layer(page, "conv1").params["with_bias"] is False
    assert page.scene.node("conv1") is not None
    # Without its bias conv1 loses one parameter per output map (16): 16x1x3x3 weights are left.
    page.flush()
    assert {row.name: row.n_params for row in page.statistics.chart.rows}["conv1"] == 16 * 3 * 3
    assert page.statistics.totals["n_params"].text() == f"{13706 - 16:,}"
    page.select_layers(["relu1"])
    page.editor.remove(["relu1"])  # replace ReLU by LeakyReLU to edit a float
    page.flush()
    page.select_layers(["conv1"])
    name = page.add_layer("LeakyReLU")
    type_into(page, "param_alpha", "0.2")
    assert layer(page, name).params["alpha"] == 0.2
    type_into(page, "param_alpha", "nan")
    assert "alpha must be" in page.properties.field("param:alpha").error_text()
    assert layer(page, name).params["alpha"] == 0.2


def test_initializers_and_lr_multipliers(conv):
    combo = conv.properties.findChild(QComboBox, "init_type_W")
    combo.setCurrentText("Uniform")
    combo.activated.emit(combo.currentIndex())
    assert layer(conv, "conv1").initializers["W"] == Initializer("Uniform", 1.0, 0.0)
    type_into(conv, "init_multiplier_W", "0.5")
    assert layer(conv, "conv1").initializers["W"].multiplier == 0.5
    type_into(conv, "init_multiplier_W", "lots")
    assert "multiplier must be a number" in conv.properties.weights_error.text()
    assert layer(conv, "conv1").initializers["W"].multiplier == 0.5
    type_into(conv, "init_value_b", "0.1")
    assert layer(conv, "conv1").initializers["b"] == Initializer("Constant", 1.0, 0.1)
    type_into(conv, "lr_W", "0")
    assert layer(conv, "conv1").lr_multipliers == {"W": 0.0}
    type_into(conv, "lr_b", "-1")
    assert "must be >= 0" in conv.properties.weights_error.text()
    assert "b" not in layer(conv, "conv1").lr_multipliers
    assert conv.document.undo_stack.count() == 4


def test_rename_keeps_selection_and_refuses_duplicates(conv):
    type_into(conv, "prop_name", "features")
    net = conv.document.project.network
    assert "features" in net.names() and net.layer("relu1").inputs == ["features"]
    assert conv.selected_layers() == ["features"]
    type_into(conv, "prop_name", "pool1")
    assert "already the name of another layer" in conv.properties.field("name").error_text()
    type_into(conv, "prop_name", "a/b")
    assert "must not contain '/'" in conv.properties.field("name").error_text()
    assert net.layer("relu1").inputs == ["features"]


def test_nothing_or_several_selected_shows_a_hint(digits_page):
    page = digits_page
    page.select_layers([])
    assert page.properties.layer_name is None
    page.select_layers(["conv1", "conv2"])
    assert "2 layers selected" in page.properties.hint.text()
