"""CONFIG: switching solver takes the new solver's NNC default learning rate unless the user typed one."""
from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QLineEdit

from tests.gui.support import open_tab_page

from nnconsole.app.config.page import ConfigPage, create_page, learning_rate_on_switch
from nnconsole.engine.project.schema import SOLVER_SPECS, SOLVERS

pytestmark = pytest.mark.gui


@pytest.fixture
def page(qtbot, digits_project) -> ConfigPage:
    return open_tab_page(qtbot, create_page, digits_project)


def _rate_field(page) -> QLineEdit:
    return page.findChild(QLineEdit, "field_optimizer.learning_rate")


def _choose(page, solver: str) -> None:
    page.findChild(QComboBox, "field_optimizer.solver").setCurrentText(solver)


def test_a_default_rate_follows_the_solver_and_undo_restores_solver_and_rate(page):
    doc = page.document
    opt = doc.project.optimizer
    assert (opt.solver, opt.learning_rate) == ("Adam", 0.001)  # Adam's NNC default Alpha
    _choose(page, "Sgd")
    assert (opt.solver, opt.learning_rate) == ("Sgd", 0.01)  # NNC's Sgd LearningRate default
    assert _rate_field(page).text() == "0.01"
    assert page.last_message == "Solver Sgd: learning rate set to Sgd's NNC default 0.01 (it was Adam's default 0.001)."
    assert "0.01 is Sgd's NNC default: switching solver sets the new solver's NNC default." in \
        _rate_field(page).toolTip()
    _choose(page, "Adamax")  # still a default: Adamax's Alpha is 0.002
    assert doc.project.optimizer.learning_rate == 0.002
    _choose(page, "Adadelta")
    assert doc.project.optimizer.learning_rate == 1.0
    assert doc.undo_stack.undoText() == "Change Solver to Adadelta"
    doc.undo_stack.undo()
    assert (doc.project.optimizer.solver, doc.project.optimizer.learning_rate) == ("Adamax", 0.002)
    doc.undo_stack.undo()
    doc.undo_stack.undo()
    opt = doc.project.optimizer
    assert (opt.solver, opt.learning_rate) == ("Adam", 0.001)
    assert _rate_field(page).text() == "0.001"
    assert page.findChild(QComboBox, "field_optimizer.solver").currentText() == "Adam"
    doc.undo_stack.redo()
    assert (doc.project.optimizer.solver, doc.project.optimizer.learning_rate) == ("Sgd", 0.01)


def test_a_rate_the_user_typed_is_kept_and_the_tooltip_says_so(qtbot, page):
    doc = page.document
    field = _rate_field(page)
    field.setFocus()
    field.selectAll()
    qtbot.keyClick(field, Qt.Key_Backspace)
    qtbot.keyClicks(field, "0.005")
    assert doc.project.optimizer.learning_rate == 0.005
    assert "0.005 was set by you (Adam's NNC default is 0.001): switching solver keeps it." in field.toolTip()
    _choose(page, "Momentum")
    opt = doc.project.optimizer
    assert (opt.solver, opt.learning_rate) == ("Momentum", 0.005)
    assert page.last_message == "Solver Momentum: learning rate 0.005 kept (you set it; Momentum's NNC default " \
                                "is 0.01)."
    doc.undo_stack.undo()  # the solver switch alone: the typed rate stays
    assert (doc.project.optimizer.solver, doc.project.optimizer.learning_rate) == ("Adam", 0.005)
    doc.undo_stack.undo()  # the typing
    assert doc.project.optimizer.learning_rate == 0.001
    assert "is Adam's NNC default" in field.toolTip()


@pytest.mark.parametrize("old", SOLVERS)
def test_every_pair_of_solvers_switches_a_default_rate_to_the_new_default(old):
    for new in SOLVERS:
        rate, _ = learning_rate_on_switch(old, new, SOLVER_SPECS[old].nnc_learning_rate)
        assert rate == SOLVER_SPECS[new].nnc_learning_rate, (old, new)
        assert learning_rate_on_switch(old, new, 0.123)[0] == 0.123
