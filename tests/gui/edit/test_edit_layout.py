"""Qt-free editing helpers: auto-layout, free spots, NNC-style names, paste renaming, node texts."""
from __future__ import annotations

from nnconsole.app.edit import layout
from nnconsole.app.edit.clipboard import layers_from_json, layers_to_json, rename_for_paste, unique_name
from nnconsole.app.edit.style import fmt_count, fmt_dims, summarize_params
from nnconsole.engine.layers import defaults
from nnconsole.engine.project.model import Initializer, Layer, Network


def residual() -> Network:
    return Network(layers=[
        Layer("x", "Input", params={"shape": [4]}),
        Layer("a", "Affine", ["x"], {"out_shape": [4]}),
        Layer("b", "ReLU", ["a"]),
        Layer("c", "Affine", ["b"], {"out_shape": [4]}),
        Layer("sum", "Add2", ["c", "a"]),  # skip connection a -> sum
        Layer("t", "Input", params={"shape": [4]}),
        Layer("loss", "SquaredError", ["sum", "t"]),
    ])


def test_auto_layout_ranks_rows_and_keeps_the_spine_straight():
    pos = layout.auto_layout(residual())
    rows = {name: p[1] / layout.AUTO_ROW for name, p in pos.items()}
    assert rows == {"x": 0, "a": 1, "b": 2, "c": 3, "sum": 4, "t": 4, "loss": 5}
    assert {pos[n][0] for n in ("x", "a", "b", "c", "sum", "loss")} == {0.0}
    assert pos["t"][0] == layout.COLUMN  # the target sits beside the prediction
    boxes = list(pos.values())
    assert not any(layout.overlaps(p, q) for i, p in enumerate(boxes) for q in boxes[i + 1:])


def test_auto_layout_survives_cycles_and_dangling_inputs():
    net = Network(layers=[Layer("a", "ReLU", ["b"]), Layer("b", "ReLU", ["a"]), Layer("c", "ReLU", ["nope"])])
    assert set(layout.auto_layout(net)) == {"a", "b", "c"}


def test_free_position_and_effective_positions():
    taken = [(0.0, 0.0), (layout.COLUMN, 0.0)]
    assert layout.free_position((0.0, 0.0), taken) == (2 * layout.COLUMN, 0.0)
    assert layout.free_position((0.0, 100.0), taken) == (0.0, 100.0)
    net = residual()
    for layer in net.layers[:3]:
        layer.position = (500.0, 500.0 + 80 * net.layers.index(layer))
    placed = layout.effective_positions(net)
    assert placed["x"] == (500.0, 500.0) and set(placed) == set(net.names())
    assert layout.snap(123.4) == 120.0


def test_nnc_style_unique_names():
    assert unique_name("Convolution", []) == "Convolution"
    assert unique_name("Convolution", ["Convolution"]) == "Convolution_2"
    assert unique_name("Convolution_2", ["Convolution", "Convolution_2"]) == "Convolution_3"


def test_clipboard_round_trip_and_paste_renaming():
    layers = [Layer("conv", "Convolution", ["x"], {"outmaps": 8, "kernel": [3, 3]},
                    {"W": Initializer("Uniform", 0.5)}, {"W": 0.1}, (10.0, 20.0)),
              Layer("relu", "ReLU", ["conv"], position=(10.0, 100.0))]
    assert layers_from_json(layers_to_json(layers)) == layers
    pasted = rename_for_paste(layers, ["conv", "relu", "x"])
    assert [(p.name, p.inputs) for p in pasted] == [("conv_2", []), ("relu_2", ["conv_2"])]


def test_node_texts():
    conv = {**defaults("Convolution"), "outmaps": 16, "kernel": [3, 3], "pad": [1, 1]}
    assert summarize_params("Convolution", conv, defaults("Convolution")) == "16 maps · 3×3 · pad 1"
    pool = {**defaults("MaxPooling"), "kernel": [2, 2], "stride": [2, 2]}
    assert summarize_params("MaxPooling", pool, defaults("MaxPooling")) == "2×2"
    assert summarize_params("Dropout", {"p": 0.25}, defaults("Dropout")) == "p 0.25"
    assert summarize_params("ReLU", {}, {}) == ""
    assert fmt_dims((16, 8, 8)) == "16×8×8" and fmt_dims([10]) == "10"
    assert fmt_count(91776) == "91.8k" and fmt_count(650) == "650" and fmt_count(2_500_000) == "2.5M"
