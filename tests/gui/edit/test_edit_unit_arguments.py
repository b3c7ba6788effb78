"""The EDIT tab and issue 26 items 1-3: a Unit's arguments (its network's Arguments and parameter properties such
as ``Convolution.W.LRateMultiplier``) are fields of its property panel and shown on its node; a property takes NNC's
``*Name`` macro (a Boolean one through its macro field), refused with the Arguments there are when it names none."""
from __future__ import annotations

import os

import pytest

from tests.support.nnc_files import resnext_like_project, vgg_like_project

pytestmark = pytest.mark.gui
SHOTS = os.environ.get("NNCONSOLE_SHOTS", "")


def _shot(page, qtbot, name: str) -> None:
    if SHOTS:
        qtbot.wait(50)
        os.makedirs(SHOTS, exist_ok=True)
        page.grab().save(os.path.join(SHOTS, name))


def _enter(field, text: str) -> None:
    """Type ``text`` into a CheckedField as the user does (the edit applies when editing finishes)."""
    field.edit.setText(text)
    field.edit.editingFinished.emit()


def test_unit_argument_rows_edit_the_units_arguments_and_show_on_its_node(page, qtbot, tmp_path):
    from nnconsole.engine.interop.files import import_file

    doc = page.document
    doc.replace_project(import_file(vgg_like_project(tmp_path / "vgg")).project)
    page.flush()
    assert page.info.errors == []
    page.select_layers(["conv2"])
    page.flush()
    box = page.properties.widgets["unit_arguments"]
    assert list(box.fields)[:6] == ["Maps", "Convolution.W.File", "Convolution.W.Initializer",
                                    "Convolution.W.InitializerMultiplier", "Convolution.W.LRateMultiplier",
                                    "Convolution.b.File"]
    assert box.fields["Maps"].edit.text() == "4" and box.fields["Maps"].edit.placeholderText() == "8"
    assert box.fields["Convolution.W.LRateMultiplier"].edit.text() == "0"
    assert box.fields["Convolution.b.LRateMultiplier"].edit.text() == ""
    node = page.scene.node("conv2")
    assert node.summary.startswith("ConvBlock · Maps=4, Convolution.W.LRateMultiplier=0")
    assert "arguments: Maps=4; Convolution.W.LRateMultiplier=0" in node.toolTip()
    _shot(page, qtbot, "unit_arguments_before.png")
    _enter(box.fields["Maps"], "6")
    _enter(box.fields["Convolution.W.LRateMultiplier"], "")
    _enter(box.fields["Convolution.b.LRateMultiplier"], "0.5")
    page.flush()
    assert doc.project.network.layer("conv2").params["arguments"] == \
        "Maps=6; Convolution.b.File=pretrained/conv2_b.h5; Convolution.b.LRateMultiplier=0.5"
    assert page.info.layers["conv2"].out_shape == (6, 4, 4) and page.info.errors == []
    assert page.scene.node("conv2").summary.startswith("ConvBlock · Maps=6, Convolution.b.File=")
    _shot(page, qtbot, "unit_arguments_after.png")
    _enter(box.fields["Maps"], "a;b")
    assert "cannot hold ';'" in box.fields["Maps"].error.text()
    doc.undo_stack.undo()
    page.flush()
    assert doc.project.network.layer("conv2").params["arguments"].startswith("Maps=6; Convolution.b.File=")
    assert box.fields["Convolution.b.LRateMultiplier"].edit.text() == ""


def test_properties_take_macros_naming_the_networks_arguments(page, qtbot, tmp_path):
    from nnconsole.engine.interop.files import import_file

    doc = page.document
    doc.replace_project(import_file(resnext_like_project(tmp_path / "rx")).project)
    doc.show_network("ResBlock")
    page.flush()
    assert page.info.errors == []
    page.select_layers(["BatchNormalization"])
    page.flush()
    panel = page.properties
    macro, check = panel.fields["macro:batch_stat"], panel.widgets["batch_stat"]
    assert macro.edit.text() == "*ConvBS" and not check.isEnabled() and macro.isVisible()
    assert page.scene.node("BatchNormalization").summary.startswith("batch_stat *ConvBS")
    _shot(page, qtbot, "macro_boolean.png")
    _enter(macro, "*ConvBN")
    assert macro.error.text() == ("batch_stat: '*ConvBN' names no Argument of this network (its Arguments: ConvBS, "
                                  "ConvKernel); add an Argument layer named 'ConvBN' first — kept *ConvBS")
    assert doc.network.layer("BatchNormalization").params["batch_stat"] == "*ConvBS"
    _enter(macro, "")  # back to the box's value
    assert doc.network.layer("BatchNormalization").params["batch_stat"] is False
    assert check.isEnabled()
    page.select_layers(["Convolution"])
    page.flush()
    kernel = panel.fields["param:kernel"]
    assert kernel.edit.text() == "*ConvKernel"
    _enter(kernel, "*Kernel")
    assert "names no Argument of this network (its Arguments: ConvBS, ConvKernel)" in kernel.error.text()
    _enter(kernel, "5,5")
    assert doc.network.layer("Convolution").params["kernel"] == [5, 5]
    _enter(kernel, "*ConvKernel")
    assert doc.network.layer("Convolution").params["kernel"] == "*ConvKernel"
    page.flush()
    assert page.info.errors == []
    _shot(page, qtbot, "macro_array.png")


def test_a_repeat_count_by_name_shows_its_name_and_value(page, qtbot, tmp_path):
    from nnconsole.engine.interop.files import import_file
    from tests.support.nnc_files import repeat_by_name_project

    doc = page.document
    doc.replace_project(import_file(repeat_by_name_project(tmp_path / "rp")).project)
    doc.show_network("Stack")
    page.flush()
    assert page.info.errors == []
    labels = [item.text() for item in page.scene.items() if hasattr(item, "text") and callable(item.text)
              and str(item.text()).startswith("x")]
    assert any(text.startswith("xn=3 · 816 params") for text in labels), labels
    page.select_layers(["RepeatStart"])
    page.flush()
    field = page.properties.fields["param:times"]
    assert field.edit.text() == "n"
    _enter(field, "*m")
    assert "'*m' names no Argument of this network (its Arguments: n)" in field.error.text()
    _enter(field, "*n")
    assert doc.network.layer("RepeatStart").params["times"] == "*n"
    _shot(page, qtbot, "repeat_times_by_name.png")
