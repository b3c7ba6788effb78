"""Building LeNet in the EDIT tab as a user does (palette, property fields, canvas drag), then
checking it against the engine: shapes, totals, a valid saved file, and exact undo/redo."""
from __future__ import annotations

import pytest

from nnconsole.app.edit import style
from tests.gui.support import copy_digits, drag_connect, palette_double_click, type_into
from nnconsole.engine.project.model import Project
from nnconsole.engine.network.shapes import infer_network
from nnconsole.engine.check.project_file import load_valid_project

pytestmark = pytest.mark.gui

# (palette type, {property field: text}) in the order a user adds them; each follows the previous.
LENET = [
    ("Input", {"param_shape": "1, 28, 28"}),
    ("Convolution", {"param_outmaps": "6", "param_kernel": "5,5"}),
    ("MaxPooling", {"param_kernel": "2 2"}),
    ("ReLU", {}),
    ("Convolution", {"param_outmaps": "16", "param_kernel": "5, 5"}),
    ("MaxPooling", {}),
    ("ReLU", {}),
    ("Affine", {"param_out_shape": "120"}),
    ("ReLU", {}),
    ("Affine", {"param_out_shape": "10"}),
    ("SoftmaxCrossEntropy", {}),
]


def build_lenet(page):
    names = []
    for type_name, fields in LENET:
        name = palette_double_click(page, type_name)
        assert page.selected_layers() == [name]  # the new layer is selected, so the next one follows it
        for field, text in fields.items():
            type_into(page, field, text)
        names.append(name)
    page.scene.select_names([])  # the label Input goes beside the network, unconnected
    palette_double_click(page, "Input")
    type_into(page, "prop_name", "label")
    type_into(page, "param_shape", "1")
    drag_connect(page, "label", names[-1], pin=1)
    page.flush()
    return names + ["label"]


def test_build_lenet_from_the_palette(page, tmp_path):
    stack = page.document.undo_stack
    original = page.document.project.copy()
    names = build_lenet(page)
    network = page.document.project.network

    assert names == ["Input", "Convolution", "MaxPooling", "ReLU", "Convolution_2", "MaxPooling_2", "ReLU_2",
                     "Affine", "ReLU_3", "Affine_2", "SoftmaxCrossEntropy", "label"]
    for previous, name in zip(names[:-3], names[1:-2]):
        assert network.layer(name).inputs == [previous]
    assert network.layer("SoftmaxCrossEntropy").inputs == ["Affine_2", "label"]
    assert network.layer("Convolution").params["kernel"] == [5, 5]
    assert network.layer("label").params["shape"] == [1]

    info = infer_network(network)  # the engine, independently of the page
    assert info.ok, info.error_text()
    assert info.layers["MaxPooling_2"].out_shape == (16, 4, 4)
    assert info.total_params == 156 + 2416 + 30840 + 1210
    for name in names:  # every node shows the engine's output shape
        assert page.scene.node(name).shape_text == style.fmt_dims(info.layers[name].out_shape)
    assert f"{info.total_params:,} parameters" in page.totals.text()
    assert [row.name for row in page.statistics.chart.rows] == info.order
    assert not [i for i in page.issues.issues if i.severity == "error"]

    saved = page.document.save(str(tmp_path / "lenet" / "project.yaml"))
    reloaded = load_valid_project(saved, check_datasets=False)  # validates the network like `nnconsole train`
    assert reloaded == page.document.project
    assert not page.document.modified

    edited = page.document.project.copy()
    while stack.canUndo():
        stack.undo()
    assert page.document.project == original == Project()
    page.flush()
    assert not page.scene.nodes()
    while stack.canRedo():
        stack.redo()
    assert page.document.project == edited
    page.flush()
    assert set(page.scene.nodes()) == set(names)


def test_add_layer_actions_follow_the_selection(page):
    page.edit_actions["add_Input"].trigger()
    page.edit_actions["add_Affine"].trigger()
    page.edit_actions["add_Softmax"].trigger()
    network = page.document.project.network
    assert [(layer.name, layer.inputs) for layer in network.layers] == [
        ("Input", []), ("Affine", ["Input"]), ("Softmax", ["Affine"])]
    positions = [layer.position for layer in network.layers]
    assert positions[1][1] > positions[0][1] and positions[2][1] > positions[1][1]  # top to bottom
    assert page.scene.node("Softmax").shape_text == "100"


def test_a_project_edited_here_validates_with_the_cli(qtbot, tmp_path, capsys):
    """Edit the digits template in the EDIT tab, save, and let ``nnconsole validate`` (what
    ``nnconsole train`` runs first) check the file with its datasets."""
    from nnconsole.app.document.project_document import ProjectDocument
    from nnconsole.app.edit.page import EditPage
    from nnconsole.engine.cli import main as cli

    project_path = copy_digits(str(tmp_path / "digits"))  # 1,797 images: linked, not copied
    document = ProjectDocument()
    document.load(project_path)
    page = EditPage(document, None)
    qtbot.addWidget(page)
    page.select_layers(["fc1"])
    type_into(page, "param_out_shape", "32")
    page.select_layers(["relu3"])
    page.add_layer("Dropout")  # inserted after relu3, then fc2 is re-fed from it
    drag_connect(page, "Dropout", "fc2", pin=0)
    assert document.project.network.layer("fc2").inputs == ["Dropout"]
    document.save()
    assert cli.main(["validate", project_path]) == 0
    assert "OK (13 layers, 9,258 parameters" in capsys.readouterr().out  # 160 + 4,640 + 4,128 + 330
