"""The EDIT tab's network tabs (issue 17): Main and the project's other networks as tabs; add, rename and
delete a network (undoable); layer edits go to the network shown, and undo returns to it."""
from __future__ import annotations

import pytest
from PySide6.QtWidgets import QInputDialog

from tests.gui.support import palette_double_click
from nnconsole.engine.project.model import ExtraOptimizer

pytestmark = pytest.mark.gui


def _tabs(page):
    bar = page.network_tabs.bar
    return [bar.tabText(i) for i in range(bar.count())]


def test_add_a_network_edit_it_and_undo_back_through_the_tabs(page, monkeypatch, tmp_path):
    doc = page.document
    palette_double_click(page, "Input")
    assert _tabs(page) == ["Main"] and doc.active_network == "Main"
    monkeypatch.setattr(QInputDialog, "getText", lambda *a, **k: ("Generator", True))
    page.network_tabs.add_button.click()  # as the user: the + button, then the name
    page.flush()
    assert _tabs(page) == ["Main", "Generator"] and doc.active_network == "Generator"
    assert page.scene.items() == [] or not doc.network.layers  # an empty canvas for the new network
    added = palette_double_click(page, "Affine")
    assert doc.project.networks["Generator"].names() == [added]
    assert doc.project.network.names() == ["Input"]  # Main untouched
    page.network_tabs.bar.setCurrentIndex(0)  # back to Main: its layers are shown and edited
    page.flush()
    assert doc.active_network == "Main" and page.info.order == ["Input"]
    doc.undo_stack.undo()  # undoing the Affine shows Generator again and removes it there
    page.flush()
    assert doc.active_network == "Generator" and doc.project.networks["Generator"].names() == []
    assert page.network_tabs.bar.currentIndex() == 1
    doc.undo_stack.undo()  # the network itself
    assert _tabs(page) == ["Main"] and doc.active_network == "Main"
    doc.undo_stack.redo()
    assert _tabs(page) == ["Main", "Generator"]
    page.grab().save(str(tmp_path / "edit_networks.png"))


def test_rename_and_delete_are_checked(page):
    doc, tabs = page.document, page.network_tabs
    assert tabs.add_network("Gen") == ""
    assert "already" in tabs.add_network("Gen") and "already" in tabs.add_network("Main")
    assert "letters" in tabs.add_network("Généré") and "empty" in tabs.add_network(" ")
    assert "letters" in tabs.add_network("a]b") and "letters" in tabs.add_network("two words")
    doc.project.optimizers.append(ExtraOptimizer(name="Optimizer_G", network="Gen"))
    assert tabs.rename_network("Gen", "Generator") == ""
    assert list(doc.project.networks) == ["Generator"] and doc.project.optimizers[0].network == "Generator"
    assert "trains network" in tabs.delete_network("Generator")
    assert "cannot be deleted" in tabs.delete_network("Main") and "keeps its name" in tabs.rename_network("Main", "X")
    doc.project.optimizers.clear()
    assert tabs.delete_network("Generator") == "" and _tabs(page) == ["Main"]
    doc.undo_stack.undo()
    assert _tabs(page) == ["Main", "Generator"] and doc.active_network == "Generator"
    doc.undo_stack.undo()  # the rename
    assert list(doc.project.networks) == ["Gen"]


def test_issues_name_an_optimizer_whose_network_is_missing(page):
    doc = page.document
    doc.project.optimizers.append(ExtraOptimizer(name="Optimizer_G", network="Gone"))
    page.refresh_issues()
    rows = [page.issues.list.topLevelItem(k) for k in range(page.issues.list.topLevelItemCount())]
    texts = [f"{row.text(1)}: {row.text(2)}" for row in rows]
    assert any(t.startswith("optimizers[0].network") and "'Gone'" in t for t in texts), texts
