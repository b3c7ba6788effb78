"""EDIT: an Input's generator (NNC's Generator and GeneratorMultiplier) is chosen in the property panel, shown on
the node, undone like any edit; the digits template's image Input is switched to generated noise (issue 26)."""
from __future__ import annotations

import os

import pytest
from PySide6.QtWidgets import QComboBox

from tests.gui.support import type_into

pytestmark = pytest.mark.gui

SHOTS = os.environ.get("NNCONSOLE_SHOTS", "")  # a folder to save the screenshots in (looked at by hand)


def _input(page):
    return next(layer for layer in page.document.project.network.layers if layer.type == "Input")


def test_the_generator_of_an_input_is_chosen_shown_and_undone(digits_page):
    page = digits_page
    name = _input(page).name
    page.select_layers([name])
    if SHOTS:
        page.grab().save(os.path.join(SHOTS, "input_generator_before.png"))
    combo = page.properties.findChild(QComboBox, "param_generator")
    assert combo is not None and [combo.itemText(i) for i in range(combo.count())] == \
        ["None", "Normal", "Uniform", "Constant", "Range"]
    assert combo.currentText() == "None"
    combo.setCurrentText("Uniform")
    combo.activated.emit(combo.currentIndex())  # what a user's pick sends
    page.flush()
    type_into(page, "param_generator_multiplier", "0.5")
    layer = _input(page)
    assert layer.params["generator"] == "Uniform" and layer.params["generator_multiplier"] == 0.5
    assert "Uniform x 0.5" in page.scene.node(name).summary
    if SHOTS:
        page.grab().save(os.path.join(SHOTS, "input_generator_after.png"))
    page.document.undo_stack.undo()
    page.document.undo_stack.undo()
    page.flush()
    assert _input(page).params.get("generator", "None") == "None"
    assert page.properties.findChild(QComboBox, "param_generator").currentText() == "None"
