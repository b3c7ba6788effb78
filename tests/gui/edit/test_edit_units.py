"""The EDIT tab and Units (issue 17): a Unit's property form picks the network it runs, the node shows the
unit's output shape, and double-clicking the Unit opens that network's tab."""
from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from nnconsole.engine.project.model import Layer, Network, Project

pytestmark = pytest.mark.gui


def unit_project() -> Project:
    project = Project(name="units")
    project.networks["Hidden"] = Network([
        Layer("in", "Input", params={"shape": [4]}), Layer("width", "Argument", params={"value": "5", "type": "PInt"}),
        Layer("fc", "Affine", ["in"], {"out_shape": "width"}, position=(0, 80)),
        Layer("act", "Tanh", ["fc"], position=(0, 160))])
    project.networks["Other"] = Network([Layer("in", "Input", params={"shape": [4]})])
    project.network = Network([
        Layer("x", "Input", params={"shape": [4]}, position=(0, 0)),
        Layer("hidden", "Unit", ["x"], {"network": "Hidden", "arguments": "width=8"}, position=(0, 80)),
        Layer("fc2", "Affine", ["hidden"], {"out_shape": 3}, position=(0, 160))])
    return project


def test_unit_form_picks_the_network_shows_the_shape_and_double_click_opens_it(page, qtbot, tmp_path):
    doc = page.document
    doc.replace_project(unit_project())
    page.flush()
    assert page.info.errors == [] and page.info.layers["hidden"].out_shape == (8,)
    assert page.info.layers["fc2"].in_shapes == [(8,)]
    page.select_layers(["hidden"])
    page.flush()
    combo = page.properties.widgets["network"]
    assert [combo.itemText(i) for i in range(combo.count())] == ["Hidden", "Other"]  # not Main: it is edited
    assert combo.currentText() == "Hidden"
    assert page.properties.widgets["info:output"].text() == page.properties.widgets["info:output"].text().strip()
    assert "8" in page.properties.widgets["info:output"].text()
    assert page.properties.widgets["info:params"].text() == "40  (its 2 layers)"  # the unit's Affine 4x8 + 8
    assert page.properties.widgets["info:macs"].text() == "32"
    qtbot.wait(50)  # the tab bar lays its new tabs out
    page.grab().save(str(tmp_path / "edit_unit.png"))
    combo.setCurrentText("Other")  # as the user: choose another network
    combo.activated.emit(combo.currentIndex())
    page.flush()
    assert doc.project.network.layer("hidden").params["network"] == "Other"
    assert any(n == "hidden" and "is not an Argument of the network" in m for n, m in page.info.errors)
    doc.undo_stack.undo()
    page.flush()
    assert doc.project.network.layer("hidden").params["network"] == "Hidden" and page.info.errors == []
    node = page.scene.node("hidden")
    view = page.view
    pos = view.mapFromScene(node.sceneBoundingRect().center())
    qtbot.mouseDClick(view.viewport(), Qt.LeftButton, pos=pos)
    page.flush()
    assert doc.active_network == "Hidden" and page.network_tabs.bar.tabText(page.network_tabs.bar.currentIndex()) \
        == "Hidden"
    assert page.info.errors == [] and page.info.layers["fc"].out_shape == (5,)  # the Argument's own value
    qtbot.wait(50)
    page.grab().save(str(tmp_path / "edit_unit_opened.png"))


def test_renaming_a_units_network_follows_and_deleting_it_is_refused(page):
    doc, tabs = page.document, page.network_tabs
    doc.replace_project(unit_project())
    assert tabs.rename_network("Hidden", "Block") == ""
    assert doc.project.network.layer("hidden").params["network"] == "Block"  # the unit follows its network
    page.flush()
    assert page.info.errors == []
    doc.undo_stack.undo()
    assert doc.project.network.layer("hidden").params["network"] == "Hidden" and "Hidden" in doc.project.networks
    problem = tabs.delete_network("Hidden")
    assert problem == "unit 'hidden' (Main) runs network 'Hidden'; remove or change the unit first"
    assert "Hidden" in doc.project.networks
    assert tabs.delete_network("Other") == ""  # no unit runs it
