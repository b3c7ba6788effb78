"""Issue 29, EDIT's share: NNC's per-property Search checkbox in the property panel, with the property's range;
each change one undo step, the node showing what is searched, an Argument's Value taking NNC's Search flag, and
CONFIG's Search section listing the searched properties (so the Search button runs them)."""
from __future__ import annotations

import os

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QCheckBox, QScrollArea

from nnconsole.app.config.page import create_page
from nnconsole.app.widgets.search_range import parse_range, range_text
from nnconsole.engine.project.io import save_project
from nnconsole.engine.project.model import SearchRange
from tests.gui.support import open_tab_page, type_into

pytestmark = pytest.mark.gui
SHOTS = "/work/shots/h29gui"


def _shot(widget, name: str) -> None:
    os.makedirs(SHOTS, exist_ok=True)
    widget.grab().save(os.path.join(SHOTS, name))


def _click(page, name: str) -> QCheckBox:
    box = page.properties.findChild(QCheckBox, name)
    assert box is not None, f"no checkbox {name} in the property panel"
    page.properties.ensureWidgetVisible(box)
    QTest.mouseClick(box, Qt.LeftButton, Qt.NoModifier, box.rect().center())
    page.flush()
    return box


def test_ranges_read_as_written_and_bad_ones_say_why():
    assert parse_range("16..128 step 16", whole=True) == SearchRange("int", 16, 128, 16)
    assert parse_range("1e-4..1e-1 log", whole=False) == SearchRange("log_float", 1e-4, 0.1)
    assert parse_range("0.1..0.5", whole=False) == SearchRange("float", 0.1, 0.5)
    assert parse_range("16, 32, true", whole=True) == SearchRange("choice", choices=[16, 32, True])
    for r in (SearchRange("int", 16, 128, 16), SearchRange("log_float", 1e-5, 1.0), SearchRange("choice", choices=[4, 8])):
        assert parse_range(range_text(r), whole=r.kind == "int") == r
    for text, why in (("128..16", "min 128 is above max 16"), ("a..16", "min 'a' is not a number"),
                      ("0..1 log", "a log range starts above 0"), ("2.5..8", "min must be a whole number"),
                      ("", "give a range")):
        with pytest.raises(ValueError, match=why):
            parse_range(text, whole=True)


def test_the_search_checkbox_marks_a_property_with_its_range_undoably(digits_page):
    page = digits_page
    stack = page.document.undo_stack
    page.select_layers(["fc1"])
    page.view.centerOn(page.scene.node("fc1"))
    _shot(page, "edit_before_search.png")
    box = _click(page, "search_out_shape")
    fc1 = page.document.project.network.layer("fc1")
    assert box.isChecked() and fc1.search == {"out_shape": SearchRange("int", 16, 128)}  # x1/4..x2 of 64
    assert stack.count() == 1 and page.scene.node("fc1").searched == ["out_shape"]
    assert "searched by nnconsole search: out_shape 16..128" in page.scene.node("fc1").toolTip()
    type_into(page, "search_range_out_shape", "32..256 step 32")
    assert page.document.project.network.layer("fc1").search["out_shape"] == SearchRange("int", 32, 256, 32)
    type_into(page, "search_range_out_shape", "128..16")  # refused: named under the field, the old range kept
    assert "min 128 is above max 16" in page.properties.widgets["search_flags"].ranges["out_shape"].error_text()
    assert page.document.project.network.layer("fc1").search["out_shape"].high == 256 and stack.count() == 2
    page.select_layers(["fc1"])
    page.view.centerOn(page.scene.node("fc1"))
    _shot(page, "edit_searched_fc1.png")
    [pasted] = page.editor.paste_text(page.editor.copy_text(["fc1"]))  # a copy stays searched, as in NNC
    assert page.document.project.network.layer(pasted).search == {"out_shape": SearchRange("int", 32, 256, 32)}
    stack.undo()
    stack.undo()
    stack.undo()
    page.flush()
    assert page.document.project.network.layer("fc1").search == {} and page.scene.node("fc1").searched == []
    assert not page.properties.findChild(QCheckBox, "search_out_shape").isChecked()
    page.select_layers(["relu1"])
    assert "search_flags" not in page.properties.widgets  # nothing of a ReLU to search


def test_an_arguments_value_takes_nncs_search_flag(digits_page):
    page = digits_page
    name = page.editor.add_layer("Argument")
    page.editor.set_param(name, "value", "8")
    page.editor.set_param(name, "type", "PInt")
    page.flush()
    page.select_layers([name])
    count = page.document.undo_stack.count()
    _click(page, "search_value")
    layer = page.document.project.network.layer(name)
    assert layer.params["search"] is True and layer.search == {"value": SearchRange("int", 2, 16)}
    assert page.document.undo_stack.count() == count + 1  # the flag and the range: one step
    _shot(page.properties, "edit_argument_searched.png")
    _click(page, "search_value")
    layer = page.document.project.network.layer(name)
    assert layer.params["search"] is False and layer.search == {}
    page.document.undo_stack.undo()
    assert page.document.project.network.layer(name).params["search"] is True


def test_config_lists_the_searched_properties_and_can_search_them(qtbot, digits_project):
    page = open_tab_page(qtbot, create_page, digits_project)
    section, launch = page.search_section, page.search_launch
    assert "none" in section.flagged.text() and not launch.search_button.isEnabled()
    layer = page.document.project.network.layer("fc1")
    page.document.undo_stack.push(_set_search(page.document, "fc1", {"out_shape": SearchRange("int", 16, 128, 16)}))
    assert "layers.fc1.out_shape" in section.flagged.text() and "16..128 step 16" in section.flagged.text()
    assert launch.search_button.isEnabled() and layer is not None
    page.findChild(QScrollArea, "config_forms").ensureWidgetVisible(section.flagged)
    qtbot.wait(50)
    _shot(page, "config_search_lists_flags.png")
    save_project(page.document.project, digits_project, backup=False)
    page.document.load(digits_project)
    assert "layers.fc1.out_shape" in page.search_section.flagged.text()


def _set_search(document, name, flags):
    from nnconsole.app.document.commands import SetSearchCommand

    [(key, searched)] = flags.items()
    return SetSearchCommand(document, name, key, searched)
