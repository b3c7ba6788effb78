"""An imported NNC network is laid out for the canvas (issue 28, item 13): NNC's boxes 60 units apart would
touch at nnconsole's node size, so the import arranges the layers in rows (and says so), moves the file's
canvas notes along with the layers they stood next to, and keeps a layout that already has room."""
from __future__ import annotations

import re

from nnconsole.engine.interop.files import import_file
from nnconsole.engine.network.layered_layout import NODE_WIDTH, crowded
from tests.support.canvas_networks import nnc_positions, repeat_layers, sdcproj_nnc_text
from tests.support.nnc_files import sdcproj_text


def _with_note(layers, near: str) -> str:
    """``layers`` placed as NNC places them, plus a Comment just right of layer ``near``."""
    x, y = dict(zip([layer[0] for layer in layers], nnc_positions(layers)))[near]
    text = sdcproj_nnc_text(layers + [("note", "Comment", {"Comment": "explains " + near}, [])])
    return re.sub(r"Type=Comment\r\nPosition_0=\d+\r\nPosition_1=\d+",
                  f"Type=Comment\r\nPosition_0={x + 250}\r\nPosition_1={y}", text)


def test_nnc_positions_are_laid_out_and_notes_follow_their_layer(tmp_path):
    path = tmp_path / "net.sdcproj"
    path.write_text(_with_note(repeat_layers(), "c2"), newline="")
    result = import_file(str(path))
    network = result.project.network
    positions = {layer.name: layer.position for layer in network.layers}
    assert not crowded(positions)
    assert sum(note.startswith("layers laid out again") for note in result.notes) == 1
    (note,) = network.comments
    assert note.text == "explains c2"
    assert note.position[1] == positions["c2"][1]  # level with its layer
    assert note.position[0] >= max(x for x, _ in positions.values()) + NODE_WIDTH  # right of every box


def test_a_spaced_file_layout_is_kept(tmp_path):
    layers = [("x", "Input", {"Size": "4", "Dataset": "x"}, []), ("fc", "Affine", {"OutShape": 3}, ["x"]),
              ("loss", "SoftmaxCrossEntropy", {"T.Dataset": "y"}, ["fc"])]
    text = sdcproj_text(layers)
    spots = iter([(0, 0), (0, 100), (0, 200)])
    text = re.sub(r"Position_0=\d+\r\nPosition_1=\d+",
                  lambda m: "Position_0={}\r\nPosition_1={}".format(*next(spots)), text)
    path = tmp_path / "spaced.sdcproj"
    path.write_text(text, newline="")
    result = import_file(str(path))
    positions = {layer.name: layer.position for layer in result.project.network.layers}
    assert (positions["x"], positions["fc"], positions["loss"]) == ((0.0, 0.0), (0.0, 100.0), (0.0, 200.0))
    assert not any(note.startswith("layers laid out again") for note in result.notes)
    assert not crowded(positions)  # the loss target the import adds goes to a free spot
