"""The layered (Sugiyama) layout of a network (issue 28, item 13), measured on the imported sample networks:
boxes never closer than the gap, rows one step apart, long edges given a slot in every row they pass that
no box takes, repeat blocks' members kept clear of other columns; and the importer's choice between the
file's positions and this layout."""
from __future__ import annotations

import pytest

from nnconsole.engine.interop.files import import_file
from nnconsole.engine.network import layered_layout as layered
from nnconsole.engine.network.repeat_blocks import find_blocks
from nnconsole.engine.project.model import Layer, Network
from tests.support.canvas_networks import SAMPLES, sdcproj_nnc_text

W, H = layered.NODE_WIDTH, layered.NODE_HEIGHT


def _imported(tmp_path, name: str) -> Network:
    path = tmp_path / f"{name}.sdcproj"
    path.write_text(sdcproj_nnc_text(SAMPLES[name]()), newline="")
    return import_file(str(path)).project.network


def _boxes(positions):
    return {n: (x, y, x + W, y + H) for n, (x, y) in positions.items()}


def _apart(a, b, gap: float) -> bool:
    """Boxes (l, t, r, b) at least ``gap`` apart horizontally or vertically."""
    return a[2] + gap <= b[0] or b[2] + gap <= a[0] or a[3] + gap <= b[1] or b[3] + gap <= a[1]


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_boxes_keep_the_gap_and_rows_the_step(tmp_path, name):
    network = _imported(tmp_path, name)
    layout = layered.layered_layout(network)
    boxes = _boxes(layout.positions)
    assert set(boxes) == set(network.names())
    items = sorted(boxes.items(), key=lambda item: item[1])
    for i, (a, box_a) in enumerate(items):
        for b, box_b in items[i + 1:]:
            if box_b[0] >= box_a[2] + layered.GAP_X:
                break
            assert _apart(box_a, box_b, layered.GAP_X - 1e-6), (a, b, box_a, box_b)
    assert {y % layered.ROW_STEP for _x, y in layout.positions.values()} == {0.0}
    # every edge that is not a loop back (a Delay's) runs downwards
    order, rank = layered.ranks(network)
    for layer in network.layers:
        for source in layer.inputs:
            if rank[source] < rank[layer.name]:
                assert layout.positions[source][1] < layout.positions[layer.name][1]


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_long_edges_get_a_free_slot_in_every_row_they_pass(tmp_path, name):
    network = _imported(tmp_path, name)
    layout = layered.layered_layout(network)
    boxes = _boxes(layout.positions)
    assert layout.routes or name == "lstm"  # skip connections, branches of unequal length
    for (source, target, _pin), points in layout.routes.items():
        for x, y in points:
            for other, (left, top, right, bottom) in boxes.items():
                inside_row = top <= y <= bottom
                assert not (inside_row and left - layered.GAP_X / 2 < x < right + layered.GAP_X / 2), \
                    (source, target, other, (x, y))


def test_a_residual_spine_stays_straight_and_the_skip_goes_beside_it(tmp_path):
    network = _imported(tmp_path, "resnet")
    assert len(network.layers) >= 300
    positions = layered.layered_layout(network).positions
    spine = [name for name in network.names() if not name.startswith("y")]
    assert {positions[name][0] for name in spine} == {0.0}
    assert positions["y"][1] == positions["fc"][1] and positions["y"][0] >= W + layered.GAP_X


def test_repeat_block_frames_take_in_no_other_column(tmp_path):
    network = _imported(tmp_path, "repeat")
    positions = layered.layered_layout(network).positions
    blocks, problems = find_blocks(network.layers)
    assert problems == [] and len(blocks) == 3
    for b in blocks:
        members = [b.start, *b.body, b.end]
        left = min(positions[m][0] for m in members)
        right = max(positions[m][0] for m in members) + W
        top = min(positions[m][1] for m in members)
        bottom = max(positions[m][1] for m in members) + H
        for name, (x, y) in positions.items():
            if name in members:
                continue
            in_rows = y < bottom and y + H > top
            assert not (in_rows and x < right + layered.GAP_X and x + W > left - layered.GAP_X), (b.start, name)


def test_crowded_tells_touching_boxes_from_spaced_ones():
    assert layered.crowded({"a": (10, 10), "b": (10, 70)})  # NNC's 60-unit rows: 8 units between boxes
    assert layered.crowded({"a": (0, 0), "b": (225, 0)})
    assert not layered.crowded({"a": (0, 0), "b": (0, 80), "c": (260, 0)})  # the templates' spacing


def test_the_import_keeps_a_spaced_layout_and_lays_out_a_crowded_one(tmp_path):
    spaced = Network(layers=[Layer("x", "Input", params={"shape": [4], "variable": "x"}, position=(0.0, 0.0)),
                             Layer("fc", "Affine", ["x"], {"out_shape": [3]}, position=(40.0, 120.0))])
    assert not layered.crowded({layer.name: layer.position for layer in spaced.layers})
    network = _imported(tmp_path, "inception")  # NNC's positions: 8 units between rows
    positions = {layer.name: layer.position for layer in network.layers}
    assert not layered.crowded(positions)
    assert positions == layered.layered_layout(network).positions


def test_cycles_and_missing_inputs_do_not_stop_it():
    net = Network(layers=[Layer("a", "ReLU", ["b"]), Layer("b", "ReLU", ["a"]), Layer("c", "ReLU", ["nope"])])
    positions = layered.layered_layout(net).positions
    assert set(positions) == {"a", "b", "c"} and not layered.crowded(positions)
