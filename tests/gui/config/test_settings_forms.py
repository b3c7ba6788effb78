"""The CONFIG and DATASET tabs build their settings editors from the settings schema: one editor per
form setting, with the schema's label, tooltip and bounds, and an undo label that names it."""
from __future__ import annotations

import pytest
from PySide6.QtWidgets import QCheckBox, QSpinBox

from tests.gui.support import open_tab_page

from nnconsole.app.config.page import create_page as create_config_page
from nnconsole.app.dataset.page import create_page as create_dataset_page
from nnconsole.engine.project.schema import SETTINGS

pytestmark = pytest.mark.gui


def test_every_config_form_setting_has_an_editor_with_the_schemas_label_and_tooltip(qtbot, digits_project):
    page = open_tab_page(qtbot, create_config_page, digits_project)
    groups = {"global": page.global_group, "optimizer": page.optimizer_group, "multi_gpu": page.multi_gpu_group}
    for setting in SETTINGS:
        if setting.form not in groups:
            continue
        group = groups[setting.form]
        editor = group.editors[setting.path]
        assert editor.widget.objectName() == f"field_{setting.path}"
        assert editor.widget.toolTip().split("\n")[0] == setting.doc  # the rate's adds what a solver switch does
        if setting.beside:  # a unit shown in its value's row: that row's label, its own as accessible name
            assert group.labels[setting.path] is group.labels[setting.beside]
            assert editor.widget.accessibleName() == setting.label
        elif setting.path != "optimizer.learning_rate":  # reads "Alpha" for the Adam family
            assert group.labels[setting.path].text() == setting.label
        if isinstance(editor.widget, QSpinBox):
            assert editor.widget.minimum() == setting.minimum


def test_dataset_options_come_from_the_schema_and_undo_names_them(qtbot, digits_document):
    page = create_dataset_page(digits_document, None)
    qtbot.addWidget(page)
    boxes = {e.spec.dotted: e.widget for e in page.option_editors}
    expected = [s for s in SETTINGS if s.form == "dataset" and s.kind == "bool"]
    assert list(boxes) == [s.path for s in expected]
    for setting in expected:
        box = boxes[setting.path]
        assert isinstance(box, QCheckBox) and box.text() == setting.label and box.toolTip() == setting.doc
    boxes["datasets.cache"].click()
    assert digits_document.project.datasets.cache is False
    assert digits_document.undo_stack.undoText() == "Change Cache decoded images"
