"""CONFIG tab: fields bound to the project with undo, and the live multi-GPU plan panel."""
from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QLineEdit, QSpinBox

from tests.gui.support import open_tab_page

from nnconsole.app.config.page import ConfigPage, create_page

pytestmark = pytest.mark.gui


@pytest.fixture
def page(qtbot, digits_project) -> ConfigPage:
    return open_tab_page(qtbot, create_page, digits_project)


def field(page, dotted):
    return page.findChild((QSpinBox, QLineEdit, QComboBox), f"field_{dotted}") or \
        page.findChild(QLineEdit, f"field_{dotted}")


def type_into(qtbot, edit: QLineEdit, text: str) -> None:
    """Replace a line edit's text key by key, as a user does (textEdited fires on every key)."""
    edit.setFocus()
    edit.selectAll()
    qtbot.keyClick(edit, Qt.Key_Backspace)
    qtbot.keyClicks(edit, text)


def test_plan_panel_shows_the_nnc_example(qtbot, page):
    """NNC's docs: batch 256 on 4 GPUs -> logical batch 1024 and LR 0.1 -> 0.4; or keep 256 with batch 64."""
    doc = page.document
    page.findChild(QComboBox, "field_optimizer.solver").setCurrentText("Momentum")
    page.findChild(QSpinBox, "field_config.batch_size").setValue(256)
    type_into(qtbot, page.findChild(QLineEdit, "field_optimizer.learning_rate"), "0.1")
    page.findChild(QSpinBox, "field_multi_gpu.workers").setValue(4)
    assert doc.project.config.batch_size == 256 and doc.project.optimizer.learning_rate == 0.1
    panel = page.plan_panel
    assert panel.cell("Logical batch", 4) == "1024"
    assert panel.cell("Learning rate", 4) == "0.4"
    assert panel.cell("Per-worker batch", 4) == "256"
    assert panel.cell("Learning rate", 1) == "0.1" and panel.cell("Logical batch", 8) == "2048"
    assert "N = 4" in panel.summary.text() and "0.1 &rarr; 0.4" in panel.summary.text()
    heads = [panel.table.horizontalHeaderItem(c).text() for c in range(panel.table.columnCount())]
    assert heads == ["N=1", "N=2", "N=4 (project)", "N=8"]
    # 1,437 training samples / (256 x 4) per iteration
    assert panel.cell("Iterations / epoch", 4) == "2"

    page.findChild(QComboBox, "field_multi_gpu.scaling").setCurrentText("keep-logical-batch")
    assert doc.project.multi_gpu.scaling == "keep-logical-batch"
    assert panel.cell("Per-worker batch", 4) == "64"
    assert panel.cell("Logical batch", 4) == "256"
    assert panel.cell("Learning rate", 4) == "0.1"


def test_a_worker_count_outside_1_2_4_8_gets_its_own_column_and_warnings_show(qtbot, page):
    page.findChild(QSpinBox, "field_multi_gpu.workers").setValue(3)
    panel = page.plan_panel
    heads = [panel.table.horizontalHeaderItem(c).text() for c in range(panel.table.columnCount())]
    assert heads == ["N=1", "N=2", "N=3 (project)", "N=4", "N=8"]
    # An LR decay every 100 iterations is not a multiple of 3 workers: the plan corrects and warns.
    type_into(qtbot, page.findChild(QLineEdit, "field_optimizer.lr_multiplier"), "0.5")
    page.findChild(QSpinBox, "field_optimizer.lr_update_interval").setValue(100)
    assert panel.cell("LR update interval", 3) == "33"
    assert panel.cell("LR multiplier", 3) == f"{0.5 ** (99 / 100):.6g}"
    assert "lr-interval-not-multiple" in panel.notes.toPlainText()


def test_impossible_settings_show_the_plan_error(qtbot, page):
    page.findChild(QComboBox, "field_multi_gpu.scaling").setCurrentText("keep-logical-batch")
    page.findChild(QSpinBox, "field_config.batch_size").setValue(2)
    page.findChild(QSpinBox, "field_multi_gpu.workers").setValue(4)
    assert page.plan_panel.error.isVisible()
    assert "config.batch_size 2 cannot be split across 4 workers" in page.plan_panel.error.text()
    page.findChild(QSpinBox, "field_multi_gpu.workers").setValue(2)
    assert not page.plan_panel.error.isVisible()
    assert page.plan_panel.cell("Per-worker batch", 2) == "1"


def test_typing_merges_into_one_undo_step_and_undo_updates_the_field(qtbot, page):
    doc = page.document
    edit = page.findChild(QLineEdit, "field_optimizer.learning_rate")
    before = doc.undo_stack.count()
    type_into(qtbot, edit, "0.005")
    assert doc.project.optimizer.learning_rate == 0.005
    assert doc.undo_stack.count() == before + 1  # "0", "0.", "0.0", ... merged
    assert doc.undo_stack.undoText() == "Change Learning rate"
    assert doc.modified
    doc.undo_stack.undo()
    assert doc.project.optimizer.learning_rate == 0.001
    assert edit.text() == "0.001"
    assert page.plan_panel.cell("Alpha", 1) == "0.001"


def test_invalid_text_is_flagged_and_not_committed(qtbot, page):
    edit = page.findChild(QLineEdit, "field_optimizer.learning_rate")
    type_into(qtbot, edit, "-1")
    assert page.document.project.optimizer.learning_rate == 0.001
    assert "border" in edit.styleSheet()


def test_solver_change_swaps_its_parameters_in_one_undo_step(qtbot, page):
    doc = page.document
    label = page.optimizer_group.labels["optimizer.learning_rate"]
    assert label.text() == "Alpha"  # Adam
    page.findChild(QComboBox, "field_optimizer.solver").setCurrentText("Momentum")
    assert doc.project.optimizer.solver == "Momentum"
    assert doc.project.optimizer.solver_params == {"momentum": 0.9}
    assert label.text() == "Learning rate"
    momentum = page.findChild(QLineEdit, "field_optimizer.solver_params.momentum")
    assert momentum is not None and momentum.text() == "0.9"
    type_into(qtbot, momentum, "0.95")
    assert doc.project.optimizer.solver_params == {"momentum": 0.95}
    doc.undo_stack.undo()  # the momentum edit
    doc.undo_stack.undo()  # the solver change, with its parameters
    assert doc.project.optimizer.solver == "Adam"
    assert doc.project.optimizer.solver_params == {"beta1": 0.9, "beta2": 0.999, "eps": 1e-08}
    assert page.findChild(QComboBox, "field_optimizer.solver").currentText() == "Adam"
    assert page.findChild(QLineEdit, "field_optimizer.solver_params.beta2").text() == "0.999"


def test_schedule_fields_follow_the_schedule_type(qtbot, page):
    steps = page.findChild(QLineEdit, "field_optimizer.schedule.steps")
    assert not steps.isEnabled()
    page.findChild(QComboBox, "field_optimizer.schedule.type").setCurrentText("step")
    assert steps.isEnabled()
    type_into(qtbot, steps, "100, 200")
    assert page.document.project.optimizer.schedule.steps == [100, 200]
    page.findChild(QSpinBox, "field_multi_gpu.workers").setValue(2)
    assert "[100, 200] -> [50, 100]" in page.plan_panel.notes.toPlainText()


def test_document_reload_refreshes_every_field(qtbot, page, digits_project):
    page.findChild(QSpinBox, "field_config.max_epoch").setValue(7)
    page.document.load(digits_project)  # the file still says 50
    assert page.findChild(QSpinBox, "field_config.max_epoch").value() == 50
