"""CONFIG tab: a unit selector (iterations or epochs) beside the LR update interval and the warm-up length."""
from __future__ import annotations

import math

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QFormLayout, QLabel, QLineEdit, QSpinBox

from tests.gui.support import open_tab_page

from nnconsole.app.config.page import ConfigPage, create_page

pytestmark = pytest.mark.gui


@pytest.fixture
def page(qtbot, digits_project) -> ConfigPage:
    return open_tab_page(qtbot, create_page, digits_project)


def type_into(qtbot, edit: QLineEdit, text: str) -> None:
    edit.setFocus()
    edit.selectAll()
    qtbot.keyClick(edit, Qt.Key_Backspace)
    qtbot.keyClicks(edit, text)


def _row_label(page, widget) -> str:
    """The form label of the row that holds ``widget`` (directly or inside a row container)."""
    form = page.optimizer_group.form
    while widget is not None:
        row, _ = form.getWidgetPosition(widget)
        if row >= 0:
            return form.itemAt(row, QFormLayout.LabelRole).widget().text()
        widget = widget.parentWidget()
    return ""


@pytest.mark.parametrize("value,unit", [("optimizer.lr_update_interval", "optimizer.lr_update_interval_unit"),
                                        ("optimizer.warmup_iterations", "optimizer.warmup_unit")])
def test_each_unit_selector_sits_in_its_values_row(page, value, unit):
    combo = page.findChild(QComboBox, f"field_{unit}")
    spin = page.findChild(QSpinBox, f"field_{value}")
    assert [combo.itemText(i) for i in range(combo.count())] == ["iterations", "epochs"]
    assert _row_label(page, combo) == _row_label(page, spin) != ""
    labels = [w.text() for w in page.optimizer_group.findChildren(QLabel)]
    assert "LR update interval unit" not in labels and "Warm-up unit" not in labels  # no row of their own


def test_epochs_in_config_reach_the_plan_and_undo_restores_iterations(qtbot, page, tmp_path):
    doc = page.document
    page.findChild(QSpinBox, "field_config.batch_size").setValue(64)
    page.findChild(QSpinBox, "field_multi_gpu.workers").setValue(4)
    page.findChild(QComboBox, "field_optimizer.schedule.type").setCurrentText("exponential")
    type_into(qtbot, page.findChild(QLineEdit, "field_optimizer.lr_multiplier"), "0.5")
    page.findChild(QSpinBox, "field_optimizer.lr_update_interval").setValue(3)
    page.findChild(QSpinBox, "field_optimizer.warmup_iterations").setValue(2)
    panel = page.plan_panel
    assert panel.cell("LR update interval", 4) == "1"  # 3 iterations / 4 workers, floored (corrected multiplier)

    page.findChild(QComboBox, "field_optimizer.lr_update_interval_unit").setCurrentText("epochs")
    page.findChild(QComboBox, "field_optimizer.warmup_unit").setCurrentText("epochs")
    opt = doc.project.optimizer
    assert (opt.lr_update_interval, opt.lr_update_interval_unit, opt.warmup_iterations, opt.warmup_unit) == \
        (3, "epochs", 2, "epochs")
    for n in (1, 2, 4, 8):  # 1,437 training samples: whole epochs of each run
        ipe = math.ceil(1437 / (64 * n))
        assert panel.cell("Iterations / epoch", n) == str(ipe)
        assert panel.cell("LR update interval", n) == f"{3 * ipe} (3 epochs)"
        assert panel.cell("LR multiplier", n) == "0.5"
        assert panel.cell("Warm-up iterations", n) == f"{2 * ipe} (2 epochs)"
    assert "3 epochs = 3 x 6 iterations per epoch = 18 iterations on each of 4 workers" in panel.notes.toPlainText()
    page.grab().save(str(tmp_path / "config_units.png"))

    assert doc.undo_stack.undoText() == "Change Warm-up unit"
    doc.undo_stack.undo()
    doc.undo_stack.undo()
    assert (opt.lr_update_interval_unit, opt.warmup_unit) == ("iterations", "iterations")
    assert page.findChild(QComboBox, "field_optimizer.lr_update_interval_unit").currentText() == "iterations"
    assert panel.cell("LR update interval", 4) == "1"


def test_the_interval_unit_follows_the_interval_when_the_schedule_has_none(page):
    combo = page.findChild(QComboBox, "field_optimizer.lr_update_interval_unit")
    page.findChild(QComboBox, "field_optimizer.schedule.type").setCurrentText("cosine")
    assert not combo.isEnabled() and not page.findChild(QSpinBox, "field_optimizer.lr_update_interval").isEnabled()
    assert page.findChild(QComboBox, "field_optimizer.warmup_unit").isEnabled()  # every schedule warms up
    page.findChild(QComboBox, "field_optimizer.schedule.type").setCurrentText("exponential")
    assert combo.isEnabled()
