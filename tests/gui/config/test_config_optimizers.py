"""The CONFIG tab's optimizer list (issue 17): the CONFIG tab's optimizer first, then the project's others;
add, edit (network, dataset, solver, rate, range) and remove them, each one undo step, bad values refused."""
from __future__ import annotations

import pytest
from PySide6.QtWidgets import QComboBox

from nnconsole.app.config.optimizer_list import END, NAME, NETWORK, RATE, SOLVER, START
from nnconsole.app.config.page import create_page
from nnconsole.engine.project.model import Network

from tests.gui.support import open_tab_page

pytestmark = pytest.mark.gui


@pytest.fixture
def page(qtbot, digits_project):
    return open_tab_page(qtbot, create_page, digits_project)


def test_add_edit_and_remove_an_optimizer(page, tmp_path):
    doc, lst = page.document, page.optimizer_list
    assert lst.table.rowCount() == 1 and lst.table.item(0, NAME).text() == "Optimizer"
    doc.project.networks["Generator"] = Network()
    doc.networks_changed.emit()
    lst.add_button.click()
    (entry,) = doc.project.optimizers
    assert (entry.name, entry.network, entry.optimizer.solver) == ("Optimizer2", "Generator",
                                                                  doc.project.optimizer.solver)
    assert lst.table.rowCount() == 2
    assert lst.set_cell(1, RATE, "0.05") == "" and doc.project.optimizers[0].optimizer.learning_rate == 0.05
    assert "positive" in lst.set_cell(1, RATE, "-1") and doc.project.optimizers[0].optimizer.learning_rate == 0.05
    assert lst.set_cell(1, END, "200") == "" and lst.set_cell(1, START, "10") == ""
    assert (doc.project.optimizers[0].start_iteration, doc.project.optimizers[0].end_iteration) == (10, 200)
    assert "used already" in lst.set_cell(1, NAME, "Optimizer")
    network = lst.table.cellWidget(1, NETWORK)
    assert isinstance(network, QComboBox) and network.objectName() == "optimizer_1_network"
    network.setCurrentText("Main")
    assert doc.project.optimizers[0].network == "Main"
    solver = lst.table.cellWidget(1, SOLVER)
    solver.setCurrentText("Sgd")
    assert doc.project.optimizers[0].optimizer.solver == "Sgd"
    page.grab().save(str(tmp_path / "config_optimizers.png"))
    stack = doc.undo_stack
    stack.undo()  # the solver
    assert doc.project.optimizers[0].optimizer.solver != "Sgd"
    assert lst.table.cellWidget(1, SOLVER).currentText() == doc.project.optimizers[0].optimizer.solver
    lst.table.selectRow(1)
    lst.remove_button.click()
    assert doc.project.optimizers == [] and lst.table.rowCount() == 1
    assert "first is the CONFIG" in lst.remove_optimizer(0)
    stack.undo()
    assert [e.name for e in doc.project.optimizers] == ["Optimizer2"]


def test_plan_panel_shows_the_chosen_optimizers_plan(page):
    doc, lst, panel = page.document, page.optimizer_list, page.plan_panel
    assert not panel.optimizer_choice.isVisibleTo(page)  # one optimizer: nothing to choose
    lst.add_button.click()
    lst.set_cell(1, RATE, "0.05")
    choice = panel.optimizer_choice
    assert choice.isVisibleTo(page) and [choice.itemText(i) for i in range(choice.count())] == [
        "Optimizer", "Optimizer2"]
    first = panel.current.effective_lr
    choice.setCurrentIndex(1)
    assert panel.current.effective_lr == 0.05 and first == doc.project.optimizer.learning_rate
    lst.set_cell(1, RATE, "0.07")  # the choice stays while the list changes
    assert choice.currentText() == "Optimizer2" and panel.current.effective_lr == 0.07
