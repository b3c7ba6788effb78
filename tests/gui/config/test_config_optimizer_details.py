"""CONFIG: the details dialog of an optimizer after the first (a GAN's discriminator, say) edits its whole
Optimizer with the CONFIG tab's own schema-driven form: solver parameters, weight decay, schedule, update
interval, warm-up. OK is one undo step, Cancel changes nothing, a bad value is refused naming the field."""
from __future__ import annotations

import copy
import os

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QDialogButtonBox, QGroupBox, QLabel, QLineEdit, QSpinBox

from tests.gui.support import ROOT, open_tab_page

from nnconsole.app.config.optimizer_list import NAME
from nnconsole.app.config.page import create_page
from nnconsole.engine.check.project_file import load_valid_project

pytestmark = pytest.mark.gui


@pytest.fixture
def page(qtbot, digits_project):
    page = open_tab_page(qtbot, create_page, digits_project)
    page.optimizer_list.add_button.click()  # Optimizer2: a copy of the CONFIG tab's (Adam, exponential)
    page.document.undo_stack.setClean()
    return page


def open_details(qtbot, page, row: int = 1):
    lst = page.optimizer_list
    lst.table.selectRow(row)
    assert lst.details_button.isEnabled()
    lst.details_button.click()
    dialog = lst.details_dialog
    qtbot.waitUntil(dialog.isVisible)
    dialog.activateWindow()  # as the window manager does: typing and clicks move the focus in it
    qtbot.waitUntil(dialog.isActiveWindow)
    return dialog


def type_into(qtbot, edit: QLineEdit, text: str) -> None:
    """Replace a line edit's text key by key, as a user does."""
    edit.setFocus()
    edit.selectAll()
    qtbot.keyClick(edit, Qt.Key_Backspace)
    qtbot.keyClicks(edit, text)


def field(dialog, dotted: str):
    found = [dialog.findChild(kind, f"field_{dotted}") for kind in (QLineEdit, QComboBox, QSpinBox)]
    widgets = [w for w in found if w is not None]
    assert len(widgets) == 1, dotted
    return widgets[0]


def press(dialog, which) -> None:
    """Click OK or Cancel with the mouse, as a user does (the field being typed in loses the focus first)."""
    from pytestqt.qtbot import QtBot

    QtBot.mouseClick(dialog.buttons.button(which), Qt.LeftButton)


def test_ok_applies_beta1_and_a_step_decay_every_3_epochs_as_one_undo_step(qtbot, page, tmp_path):
    doc = page.document
    before = copy.deepcopy(doc.project.optimizers)
    first = copy.deepcopy(doc.project.optimizer)
    count = doc.undo_stack.count()
    dialog = open_details(qtbot, page)
    assert "Optimizer2" in dialog.windowTitle()
    type_into(qtbot, field(dialog, "optimizer.solver_params.beta1"), "0.5")
    type_into(qtbot, field(dialog, "optimizer.weight_decay"), "0.0001")
    field(dialog, "optimizer.schedule.type").setCurrentText("exponential")
    type_into(qtbot, field(dialog, "optimizer.lr_multiplier"), "0.5")
    field(dialog, "optimizer.lr_update_interval").setValue(3)
    field(dialog, "optimizer.lr_update_interval_unit").setCurrentText("epochs")
    field(dialog, "optimizer.warmup_iterations").setValue(2)
    field(dialog, "optimizer.warmup_unit").setCurrentText("epochs")
    field(dialog, "optimizer.update_interval").setValue(2)
    assert doc.project.optimizers == before and doc.undo_stack.count() == count  # nothing reaches the project yet
    press(dialog, QDialogButtonBox.Ok)
    assert not dialog.isVisible()
    o = doc.project.optimizers[0].optimizer
    assert o.solver_params == {"beta1": 0.5, "beta2": 0.999, "eps": 1e-8}
    assert (o.weight_decay, o.lr_multiplier, o.lr_update_interval, o.lr_update_interval_unit) == (
        0.0001, 0.5, 3, "epochs")
    assert (o.warmup_iterations, o.warmup_unit, o.update_interval) == (2, "epochs", 2)
    assert doc.project.optimizer == first  # the CONFIG tab's optimizer is not touched
    assert doc.undo_stack.count() == count + 1 and doc.modified

    doc.save()
    saved = load_valid_project(doc.project.path, check_datasets=False).optimizers[0].optimizer
    assert saved == o
    text = open(doc.project.path, encoding="utf-8").read()
    assert "beta1: 0.5" in text and "lr_update_interval_unit: epochs" in text

    doc.undo_stack.undo()
    assert doc.project.optimizers == before
    assert page.optimizer_list.table.item(1, NAME).text() == "Optimizer2"
    doc.undo_stack.redo()
    assert doc.project.optimizers[0].optimizer == o


def test_export_to_sdcproj_keeps_what_nnc_has_fields_for(qtbot, page, tmp_path):
    from nnconsole.engine.interop.sdcproj.importer import import_sdcproj
    from nnconsole.engine.interop.sdcproj.exporter import export_sdcproj

    dialog = open_details(qtbot, page)
    type_into(qtbot, field(dialog, "optimizer.solver_params.beta1"), "0.5")
    type_into(qtbot, field(dialog, "optimizer.weight_decay"), "0.0001")
    type_into(qtbot, field(dialog, "optimizer.lr_multiplier"), "0.5")
    field(dialog, "optimizer.lr_update_interval").setValue(3)
    field(dialog, "optimizer.lr_update_interval_unit").setCurrentText("epochs")
    field(dialog, "optimizer.warmup_iterations").setValue(2)
    press(dialog, QDialogButtonBox.Ok)
    result = export_sdcproj(page.document.project, str(tmp_path / "gan.sdcproj"))
    section = open(result.path, encoding="utf-8").read().split("[Optimizer_1]")[1].split("\n[")[0]
    assert "SolverParameterName_1=Beta1" in section and "SolverParameter_1=0.5" in section
    assert "LearningRateUpdateInterval=3" in section and "LearningRateMultiplier=0.5" in section
    back = import_sdcproj(result.path).project.optimizers[0].optimizer
    assert back.solver_params["beta1"] == 0.5 and back.weight_decay == 0.0001
    assert (back.lr_multiplier, back.lr_update_interval, back.lr_update_interval_unit) == (0.5, 3, "epochs")
    # NNC's .sdcproj has no warm-up for optimizers after the first: the exporter says so rather than losing it.
    assert any("warm-up" in u and "Optimizer2" in u for u in result.unsupported)


def test_cancel_changes_nothing(qtbot, page):
    doc = page.document
    before = copy.deepcopy(doc.project)
    count = doc.undo_stack.count()
    dialog = open_details(qtbot, page)
    type_into(qtbot, field(dialog, "optimizer.solver_params.beta2"), "0.9")
    field(dialog, "optimizer.solver").setCurrentText("Momentum")
    field(dialog, "optimizer.schedule.type").setCurrentText("cosine")
    press(dialog, QDialogButtonBox.Cancel)
    assert not dialog.isVisible()
    assert doc.project == before and doc.undo_stack.count() == count and not doc.modified


@pytest.mark.parametrize("dotted,text,named", [
    ("optimizer.solver_params.beta1", "abc", "beta1"),
    ("optimizer.solver_params.beta1", "nan", "beta1"),
    ("optimizer.solver_params.eps", "-1", "eps"),
    ("optimizer.learning_rate", "-0.1", "Alpha"),
    ("optimizer.lr_multiplier", "inf", "LR multiplier"),
    ("optimizer.weight_decay", "1e", "Weight decay"),
])
def test_a_hostile_value_is_refused_naming_the_field_and_the_dialog_stays_open(qtbot, page, dotted, text, named):
    doc = page.document
    before = copy.deepcopy(doc.project)
    dialog = open_details(qtbot, page)
    type_into(qtbot, field(dialog, "optimizer.solver_params.beta2"), "0.99")  # a good edit beside the bad one
    type_into(qtbot, field(dialog, dotted), text)
    press(dialog, QDialogButtonBox.Ok)
    assert dialog.isVisible()
    message = dialog.error.text()
    assert dialog.error.isVisible() and named in message and repr(text) in message, message
    assert field(dialog, dotted).text() == text and "border" in field(dialog, dotted).styleSheet()  # still shown red
    assert doc.project == before and not doc.modified
    type_into(qtbot, field(dialog, dotted), "0.5")  # fixed: now it is taken, with the good edit
    press(dialog, QDialogButtonBox.Ok)
    assert not dialog.isVisible()
    assert doc.project.optimizers[0].optimizer.solver_params["beta2"] == 0.99


def test_a_value_the_settings_checks_refuse_is_refused_with_their_message(qtbot, page):
    """An editor takes any number >= 0 for a solver parameter; the project's checks know a switch is 0 or 1."""
    doc = page.document
    before = copy.deepcopy(doc.project)
    dialog = open_details(qtbot, page)
    field(dialog, "optimizer.solver").setCurrentText("AdaBelief")
    type_into(qtbot, field(dialog, "optimizer.solver_params.amsgrad"), "0.5")
    press(dialog, QDialogButtonBox.Ok)
    assert dialog.isVisible() and doc.project == before
    message = dialog.error.text()
    assert "amsgrad: AdaBelief's 'amsgrad' is a switch, got 0.5 (use 0 (off) or 1 (on))" in message, message
    assert "optimizers[0].optimizer.solver_params.amsgrad" in message
    type_into(qtbot, field(dialog, "optimizer.solver_params.amsgrad"), "1")
    press(dialog, QDialogButtonBox.Ok)
    assert not dialog.isVisible() and doc.project.optimizers[0].optimizer.solver_params["amsgrad"] == 1.0


def test_beta1_of_5_is_refused(qtbot, page):
    dialog = open_details(qtbot, page)
    type_into(qtbot, field(dialog, "optimizer.solver_params.beta1"), "5")
    press(dialog, QDialogButtonBox.Ok)
    assert dialog.isVisible() and "beta1" in dialog.error.text() and "[0, 1)" in dialog.error.text()


def test_the_solver_parameters_follow_the_solver_and_the_schedule_fields_its_type(qtbot, page):
    doc = page.document
    dialog = open_details(qtbot, page)
    solver_box = dialog.form.solver_group
    assert solver_box.title() == "Solver parameters (Adam)"
    assert dialog.form.optimizer_group.labels["optimizer.learning_rate"].text() == "Alpha"
    field(dialog, "optimizer.solver").setCurrentText("Momentum")
    assert solver_box.title() == "Solver parameters (Momentum)"
    assert dialog.findChild(QLineEdit, "field_optimizer.solver_params.beta1") is None
    type_into(qtbot, field(dialog, "optimizer.solver_params.momentum"), "0.8")
    assert dialog.form.optimizer_group.labels["optimizer.learning_rate"].text() == "Learning rate"
    assert field(dialog, "optimizer.learning_rate").text() == "0.01"  # Momentum's NNC default, as in the forms
    steps = field(dialog, "optimizer.schedule.steps")
    assert not steps.isEnabled()
    field(dialog, "optimizer.schedule.type").setCurrentText("step")
    assert steps.isEnabled() and not field(dialog, "optimizer.lr_multiplier").isEnabled()
    type_into(qtbot, steps, "300, 600")
    type_into(qtbot, field(dialog, "optimizer.schedule.gamma"), "0.5")
    press(dialog, QDialogButtonBox.Ok)
    o = doc.project.optimizers[0].optimizer
    assert (o.solver, o.solver_params, o.learning_rate) == ("Momentum", {"momentum": 0.8}, 0.01)
    assert (o.schedule.type, o.schedule.steps, o.schedule.gamma) == ("step", [300, 600], 0.5)
    assert page.optimizer_list.table.cellWidget(1, 3).currentText() == "Momentum"  # the list follows
    doc.undo_stack.undo()
    assert doc.project.optimizers[0].optimizer.solver == "Adam"


def test_double_clicking_a_name_opens_the_details_and_the_first_row_has_none(qtbot, page):
    lst = page.optimizer_list
    lst.table.selectRow(0)
    assert not lst.details_button.isEnabled()
    assert "forms above" in lst.open_details(0)
    lst.table.selectRow(1)
    rect = lst.table.visualItemRect(lst.table.item(1, NAME))
    qtbot.mouseClick(lst.table.viewport(), Qt.LeftButton, pos=rect.center())  # Qt 6's double-click event
    qtbot.mouseDClick(lst.table.viewport(), Qt.LeftButton, pos=rect.center())  # follows a press
    qtbot.waitUntil(lambda: lst.details_dialog is not None and lst.details_dialog.isVisible())
    assert "Optimizer2" in lst.details_dialog.windowTitle()
    assert lst.table.state() != lst.table.State.EditingState  # the name is not opened for typing instead
    lst.details_dialog.reject()
    lst.table.setCurrentCell(1, NAME)
    qtbot.keyClick(lst.table, Qt.Key_F2)  # a name is still typed in after F2
    assert lst.table.state() == lst.table.State.EditingState


def test_screenshot_of_an_adam_optimizer_with_a_step_schedule(qtbot, page, tmp_path):
    dialog = open_details(qtbot, page)
    field(dialog, "optimizer.schedule.type").setCurrentText("step")
    type_into(qtbot, field(dialog, "optimizer.schedule.steps"), "300, 600")
    qtbot.wait(50)
    for label in dialog.findChildren(QLabel):
        if label.isVisible() and label.text() and not label.wordWrap():
            assert label.width() >= label.minimumSizeHint().width(), label.text()  # nothing cut off
    for box in dialog.findChildren(QGroupBox):
        assert not box.isVisible() or box.width() >= box.minimumSizeHint().width()
    assert dialog.height() <= 900  # fits a small screen
    image = dialog.grab()
    image.save(str(tmp_path / "optimizer_details.png"))
    if os.environ.get("NNCONSOLE_SCREENSHOTS"):  # a folder to look at the dialog in
        image.save(os.path.join(os.environ["NNCONSOLE_SCREENSHOTS"], "optimizer_details.png"))
    assert image.width() > 300 and image.height() > 300


def test_the_gan_templates_generator_optimizer_shows_its_own_adam_and_keeps_the_rest(qtbot, tmp_path):
    """A GAN (the gan_2d template): the generator's Adam beta1 0.5 is shown and edited; the other optimizer and the
    generator's name, network and range stay as they were."""
    import shutil

    from nnconsole.app.config.optimizer_list import DATASET

    template = os.path.join(ROOT, "project_templates", "gan_2d")
    shutil.copytree(template, tmp_path / "gan", ignore=shutil.ignore_patterns("README.md"))
    page = open_tab_page(qtbot, create_page, str(tmp_path / "gan" / "project.yaml"))
    doc = page.document
    (entry,) = doc.project.optimizers
    before = copy.deepcopy(entry)
    first = copy.deepcopy(doc.project.optimizer)
    dialog = open_details(qtbot, page)
    assert entry.name in dialog.windowTitle() and entry.network in dialog.findChild(QLabel, "optimizer_details_what").text()
    beta1 = field(dialog, "optimizer.solver_params.beta1")
    assert beta1.text() == "0.5" and field(dialog, "optimizer.learning_rate").text() == "0.005"
    type_into(qtbot, beta1, "0.3")
    press(dialog, QDialogButtonBox.Ok)
    after = copy.deepcopy(doc.project.optimizers[0])
    assert after.optimizer.solver_params["beta1"] == 0.3 and doc.project.optimizer == first
    after.optimizer.solver_params["beta1"] = 0.5
    assert after == before and len(doc.project.optimizers) == 1  # nothing else moved
    assert page.optimizer_list.table.cellWidget(1, DATASET).currentText() == before.dataset
