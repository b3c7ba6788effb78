"""Undo commands: each kind of edit redoes and undoes exactly, moves merge, macros are one step."""
from __future__ import annotations

import copy

import pytest

from nnconsole.app.document import commands
from nnconsole.app.document.project_document import ProjectDocument
from nnconsole.engine.project.model import Initializer, Layer

pytestmark = pytest.mark.gui


@pytest.fixture
def doc(template_project):
    document = ProjectDocument()
    document.load(template_project)
    return document


def push(doc, command):
    doc.undo_stack.push(command)


def test_every_command_undoes_to_the_exact_original(doc):
    original = doc.project.copy()
    stack = doc.undo_stack
    push(doc, commands.AddLayerCommand(doc, Layer("drop", "Dropout", ["relu3"], {"p": 0.25}, position=(300.0, 640.0))))
    push(doc, commands.DisconnectCommand(doc, "fc2", 0))
    push(doc, commands.ConnectCommand(doc, "drop", "fc2"))
    push(doc, commands.SetParamCommand(doc, "conv1", "kernel", (5, 5)))
    push(doc, commands.SetInitializerCommand(doc, "fc1", "W", Initializer("NormalAffineHe", 2.0)))
    push(doc, commands.SetInitializerCommand(doc, "fc1", "b", None))
    push(doc, commands.SetLrMultiplierCommand(doc, "conv2", "W", 0.5))
    push(doc, commands.MoveNodesCommand(doc, {"x": (10.0, -20.0)}))
    push(doc, commands.RenameLayerCommand(doc, "fc2", "logits"))
    push(doc, commands.RemoveLayersCommand(doc, ["relu1"]))
    edited = doc.project.copy()
    net = doc.project.network
    assert net.layer("fc2" if "fc2" in net.names() else "logits").inputs == ["drop"]
    assert net.layer("conv1").params["kernel"] == [5, 5]  # stored as the list YAML gives back
    assert net.layer("fc1").initializers["W"] == Initializer("NormalAffineHe", 2.0)
    assert "b" not in net.layer("fc1").initializers
    assert net.layer("conv2").lr_multipliers == {"W": 0.5}
    assert net.layer("x").position == (10.0, -20.0)
    assert net.layer("loss").inputs == ["logits", "y"]  # rename follows into consumers
    assert "relu1" not in net.names()
    assert stack.count() == 10

    while stack.canUndo():
        stack.undo()
    assert doc.project == original
    assert [layer.name for layer in doc.project.network.layers] == [layer.name for layer in original.network.layers]
    while stack.canRedo():
        stack.redo()
    assert doc.project == edited


def test_remove_layers_restores_indices(doc):
    names_before = doc.project.network.names()
    push(doc, commands.RemoveLayersCommand(doc, ["pool2", "x", "loss"]))
    assert doc.project.network.names() == [n for n in names_before if n not in ("pool2", "x", "loss")]
    doc.undo_stack.undo()
    assert doc.project.network.names() == names_before


def test_consecutive_moves_of_the_same_nodes_merge(doc):
    stack = doc.undo_stack
    start = doc.project.network.layer("conv1").position
    push(doc, commands.MoveNodesCommand(doc, {"conv1": (10.0, 80.0)}))
    push(doc, commands.MoveNodesCommand(doc, {"conv1": (20.0, 90.0)}))
    push(doc, commands.MoveNodesCommand(doc, {"conv1": (30.0, 100.0)}))
    assert stack.count() == 1
    assert doc.project.network.layer("conv1").position == (30.0, 100.0)
    push(doc, commands.MoveNodesCommand(doc, {"conv1": (0.0, 0.0), "x": (5.0, 5.0)}))  # other set: new step
    assert stack.count() == 2
    stack.undo()
    stack.undo()
    assert doc.project.network.layer("conv1").position == start


def test_auto_layout_style_moves_do_not_merge(doc):
    push(doc, commands.MoveNodesCommand(doc, {"conv1": (10.0, 80.0)}))
    push(doc, commands.MoveNodesCommand(doc, {"conv1": (20.0, 80.0)}, text="Auto layout", mergeable=False))
    assert doc.undo_stack.count() == 2


def test_macro_is_one_undo_step_and_marks_title_state(doc):
    stack = doc.undo_stack
    seen = []
    doc.modified_changed.connect(seen.append)
    original = copy.deepcopy(doc.project)
    stack.beginMacro("Delete conv1")
    push(doc, commands.DisconnectCommand(doc, "relu1", 0))
    push(doc, commands.RemoveLayersCommand(doc, ["conv1"]))
    stack.endMacro()
    assert stack.count() == 1 and doc.modified and seen == [True]
    stack.undo()
    assert doc.project == original and not doc.modified and seen == [True, False]


def test_set_layer_field_commands_copy_their_values(doc):
    params = {"outmaps": 8, "kernel": [3, 3], "pad": [1, 1], "stride": [1, 1]}
    command = commands.SetParamCommand(doc, "conv1", "outmaps", 8)
    push(doc, command)
    doc.project.network.layer("conv1").params["outmaps"] = 99  # someone mutates the model in place
    doc.undo_stack.undo()
    doc.undo_stack.redo()
    assert doc.project.network.layer("conv1").params == params
