"""Recurrent blocks (RecurrentInput, RecurrentOutput, Delay): unrolled over time as nnabla's loader expands
them, checked against nnabla's own expansion of the same .nntxt, and reported in the network's own names."""
from __future__ import annotations

import os

import numpy as np
import pytest

from nnconsole.engine.project.model import Layer as L
from nnconsole.engine.project.model import Network
from nnconsole.engine.network.shapes import infer_network
from tests.support.paths import DATA

ELMAN_NNTXT = os.path.join(DATA, "recurrent", "elman.nntxt")  # written as NNC writes a recurrent network


def elman(steps: int = 5, features: int = 3, hidden: int = 4, **delay) -> Network:
    """x (steps, features) -> RecurrentInput -> [x_t, h_{t-1}] -> Affine -> Tanh -> h (Delay) ... -> RecurrentOutput."""
    return Network([
        L("x", "Input", params={"shape": [steps, features]}),
        L("r", "RecurrentInput", ["x"]),
        L("cat", "Concatenate", ["r", "h"]),
        L("fc", "Affine", ["cat"], {"out_shape": [hidden]}),
        L("act", "Tanh", ["fc"]),
        L("h", "Delay", ["act"] + delay.pop("initial", []), {"size": [hidden], **delay}),
        L("o", "RecurrentOutput", ["act"]),
        L("y", "Input", params={"shape": [steps, hidden]}),
        L("loss", "SquaredError", ["o", "y"]),
    ])


def test_shapes_are_per_step_inside_the_block_and_weights_are_shared_over_time():
    info = infer_network(elman())
    assert info.errors == []
    shapes = {n: info.layers[n].out_shape for n in info.order}
    assert shapes == {"x": (5, 3), "r": (3,), "h": (4,), "cat": (7,), "fc": (4,), "act": (4,), "o": (5, 4),
                      "y": (5, 4), "loss": (5, 4)}
    assert info.layers["r"].in_shapes == [(5, 3)] and info.layers["o"].in_shapes == [(4,)]
    assert info.total_params == 7 * 4 + 4 == info.layers["fc"].n_params  # one set of weights for 5 steps
    assert info.layers["fc"].macs == 5 * 7 * 4  # every step costs its multiply-adds
    assert info.loss_layers == ["loss"] and set(info.input_variables) == {"x", "y"}


@pytest.mark.slow
def test_unrolled_graph_equals_nnablas_own_expansion_of_the_same_nntxt():
    """nnabla's loader expands NNC's .nntxt (repeat_info, recurrent_param, Delay); nnconsole's unrolled
    graph of the same network, on the same weights and inputs, computes the same outputs and gradients."""
    import nnabla as nn
    from nnabla.utils.load import load

    from nnconsole.engine.runtime.graph import build_graph

    rng = np.random.RandomState(0)
    x = rng.randn(2, 5, 3).astype(np.float32)
    nn.clear_parameters()
    try:
        loaded = load([ELMAN_NNTXT], prepare_data_iterator=False, batch_size=2).networks["Main"]
        theirs = loaded.variables
        theirs["x"].variable_instance.d = x
        theirs["h_init"].variable_instance.d = 0.0
        out = theirs["o"].variable_instance
        out.forward()
        expected = out.d.copy()
        assert sorted(nn.get_parameters()) == ["fc/affine/W", "fc/affine/b"]
        built = build_graph(elman(), 2, "validation")  # reuses the loaded weights (same names)
        assert sorted(built.parameters) == ["fc/affine/W", "fc/affine/b"]
        built.inputs["x"].d = x
        built.outputs["o"].forward()
        assert np.allclose(built.outputs["o"].d, expected, atol=1e-6)
        # gradients through time: d(sum o)/dW from both graphs
        params = nn.get_parameters()
        for graph_out in (out, built.outputs["o"]):
            for p in params.values():
                p.grad.zero()
            graph_out.forward()
            graph_out.backward(np.ones(graph_out.shape, dtype=np.float32), clear_buffer=True)
            grads = [params[k].g.copy() for k in sorted(params)]
            if graph_out is out:
                first = grads
        for a, b in zip(first, grads):
            assert np.allclose(a, b, atol=1e-5)
    finally:
        nn.clear_parameters()


@pytest.mark.slow
def test_delay_reads_its_initial_input_or_generator_at_the_first_step():
    import nnabla as nn

    from nnconsole.engine.runtime.graph import build_graph

    nn.clear_parameters()
    try:
        net = elman(steps=3, hidden=2, initial_generator="Constant", initial_multiplier=0.5)
        built = build_graph(net, 1, "validation")
        w = np.array([[0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
        built.parameters["fc/affine/W"].d, built.parameters["fc/affine/b"].d = w, 0.0  # h_t = tanh(h_{t-1})
        built.inputs["x"].d = 0.0
        built.outputs["o"].forward()
        h, steps = 0.5, []
        for _ in range(3):
            h = np.tanh(h)
            steps.append(h)
        assert np.allclose(built.outputs["o"].d[0, :, 0], steps, atol=1e-6)
        # Initial connected: the dataset variable 'h0' gives the first step's previous value
        net = elman(steps=3, hidden=2, initial=["h0"])
        net.layers.insert(0, L("h0", "Input", params={"shape": [2]}))
        built = build_graph(net, 1, "validation")
        assert set(built.inputs) == {"x", "y", "h0"}
        # Generator None: the dataset variable initial_dataset
        built = build_graph(elman(steps=3, hidden=2, initial_generator="None", initial_dataset="c"), 1,
                            "validation")
        assert set(built.inputs) == {"x", "y", "c"}
    finally:
        nn.clear_parameters()


def _errors(net: Network) -> dict:
    info = infer_network(net)
    return {name: message for name, message in info.errors}


def test_block_mistakes_are_named_on_the_layer_with_the_fix():
    net = elman()
    net.layer("h").params = {}  # generated initial value without a size
    assert "give its size" in _errors(net)["h"]
    assert "h" not in _errors(elman(initial_generator="Normal"))  # generated (issue 26): test_delay_generated_initial
    lone = Network([L("x", "Input", params={"shape": [4]}), L("d", "Delay", ["x"], {"size": [4]}),
                    L("o", "RecurrentOutput", ["x"])])
    errors = _errors(lone)
    assert "not inside a recurrent block" in errors["d"] and "closes no recurrent block" in errors["o"]
    net = elman()
    net.layer("cat").inputs = ["r", "o"]  # the whole sequence inside its own block
    assert "reads its RecurrentOutput 'o'" in " ".join(_errors(net).values())
    net = elman()
    net.layers.insert(1, L("x2", "Input", params={"shape": [6, 3]}))
    net.layers.insert(2, L("r2", "RecurrentInput", ["x2"]))
    net.layer("cat").inputs = ["r", "h", "r2"]
    text = " ".join(_errors(net).values())
    assert "different lengths" in text and "'r' 5" in text and "'r2' 6" in text
    net = elman()
    net.layer("x").params["shape"] = [5]  # no axis left for the features
    assert "time axis" in " ".join(_errors(net).values())
    net = elman(steps=20_000)  # 20,000 steps x 5 layers: too big a graph to build, said before building it
    assert "100,000 layers unrolled (at most 50,000)" in _errors(net)["r"]


def test_two_blocks_in_a_row_and_a_time_axis_other_than_the_first():
    net = Network([
        L("x", "Input", params={"shape": [3, 6]}),
        L("r", "RecurrentInput", ["x"], {"axis": 1}),  # 6 steps of 3 features
        L("fc", "Affine", ["r"], {"out_shape": [2]}),
        L("o", "RecurrentOutput", ["fc"], {"axis": 1}),  # (2, 6)
        L("r2", "RecurrentInput", ["o"], {"axis": 1}),
        L("s", "Add2", ["r2", "d"]),
        L("d", "Delay", ["s"], {"size": [2]}),  # a running sum
        L("o2", "RecurrentOutput", ["s"]),  # (6, 2)
        L("y", "Input", params={"shape": [6, 2]}),
        L("loss", "SquaredError", ["o2", "y"]),
    ])
    info = infer_network(net)
    assert info.errors == []
    assert [info.layers[n].out_shape for n in ("r", "fc", "o", "r2", "s", "o2")] == \
        [(3,), (2,), (2, 6), (2,), (2,), (6, 2)]
    import nnabla as nn

    from nnconsole.engine.runtime.graph import build_graph

    nn.clear_parameters()
    try:
        built = build_graph(net, 2, "validation")
        x = np.random.RandomState(1).randn(2, 3, 6).astype(np.float32)
        built.inputs["x"].d = x
        built.outputs["o2"].forward()
        w, b = built.parameters["fc/affine/W"].d, built.parameters["fc/affine/b"].d
        per_step = np.einsum("bft,fo->bto", x, w) + b
        assert np.allclose(built.outputs["o2"].d, np.cumsum(per_step, axis=1), atol=1e-5)
    finally:
        nn.clear_parameters()


@pytest.mark.parametrize("seed", range(3))
def test_inference_never_raises_on_rewired_blocks(seed):
    """Random rewiring of a recurrent network gives errors, never an exception."""
    import random

    rng = random.Random(seed)
    for _ in range(100):
        net = elman()
        names = [layer.name for layer in net.layers] + ["nope"]
        for layer in net.layers:
            if layer.type != "Input" and rng.random() < 0.3:
                layer.inputs = rng.sample(names, rng.randint(0, 2))
        infer_network(net)


def lstm_network(steps: int = 5, features: int = 3, size: int = 4) -> Network:
    return Network([L("x", "Input", params={"shape": [steps, features]}),
                    L("lstm", "LSTM", ["x"], {"size": [size]}),
                    L("y", "Input", params={"shape": [steps, size]}), L("loss", "SquaredError", ["lstm", "y"])])


def test_nncs_lstm_unit_computes_an_lstm_and_costs_what_nnc_says():
    """NNC's LSTM unit (Unit/LSTM.sdcproj: Concatenate(x_t, H) -> Affine/IGate/FGate/OGate, C = i*g + f*C_prev,
    h = o*tanh(C)) against the same equations in numpy; NNC's CostParameter and CostMultiplyAdd formulas."""
    import nnabla as nn

    from nnconsole.engine.runtime.graph import build_graph

    info = infer_network(lstm_network())
    li = info.layers["lstm"]
    assert info.errors == [] and li.out_shape == (5, 4) and li.in_shapes == [(5, 3)]
    assert li.n_params == info.total_params == 4 * ((3 + 4) * 4 + 4)  # NNC: *SumParameterSize
    assert li.macs == (3 + 4) * 4 * 5 * 4  # NNC: (InnerShape + Size) * Size * Length * 4
    nn.clear_parameters()
    try:
        built = build_graph(lstm_network(), 2, "validation")
        x = np.random.RandomState(0).randn(2, 5, 3).astype(np.float32)
        built.inputs["x"].d = x
        built.outputs["lstm"].forward()
        p = {k: v.d for k, v in built.parameters.items()}

        def affine(v, gate):
            return v @ p[f"lstm_{gate}/affine/W"] + p[f"lstm_{gate}/affine/b"]

        def sigmoid(z):
            return 1 / (1 + np.exp(-z))

        h, c, steps = np.zeros((2, 4)), np.zeros((2, 4)), []
        for t in range(5):
            z = np.concatenate([x[:, t], h], 1)
            c = sigmoid(affine(z, "IGate")) * np.tanh(affine(z, "Affine")) + sigmoid(affine(z, "FGate")) * c
            h = sigmoid(affine(z, "OGate")) * np.tanh(c)
            steps.append(h)
        assert np.allclose(built.outputs["lstm"].d, np.stack(steps, 1), atol=1e-5)
    finally:
        nn.clear_parameters()


@pytest.mark.slow
def test_nncs_lstm_unit_imports_from_sdcproj_and_exports_as_its_layers(tmp_path):
    import nnabla as nn
    from nnabla.utils.load import load

    from nnconsole.engine.interop.files import export_nntxt, import_file
    from nnconsole.engine.project.model import Datasets, Project
    from tests.support import nnc_reference
    from tests.support.nnc_files import sdcproj_text

    props = {k: p.value for k, p in nnc_reference.layer("LSTM").properties.items()
             if not p.value.startswith("*") and not k.startswith("Cost")}  # as NNC saves a fresh unit
    props.update(Size="8", Length="5", RecurrentGroupID="LSTM", InnerShape="3")
    path = tmp_path / "lstm.sdcproj"
    path.write_text(sdcproj_text([("x", "Input", {"Size": "5,3", "Dataset": "x"}, []), ("LSTM", "LSTM", props, ["x"]),
                                  ("loss", "SquaredError", {"T.Dataset": "y"}, ["LSTM"])]), newline="")
    result = import_file(str(path))
    assert result.unsupported == []
    unit = result.project.network.layer("LSTM")
    assert unit.type == "LSTM" and unit.params["size"] == [8]
    assert infer_network(result.project.network).layers["LSTM"].out_shape == (5, 8)
    project = Project(name="lstm", network=result.project.network, datasets=Datasets(training="a.csv",
                                                                                      validation="a.csv"))
    out = tmp_path / "lstm.nntxt"
    written = export_nntxt(project, str(out))
    assert any("written as the recurrent layers" in n for n in written.notes)
    nn.clear_parameters()
    try:  # nnabla's loader unrolls the written block and gives the unit's output shape
        net = load([str(out)], prepare_data_iterator=False, batch_size=2).networks["MainValidation"]
        assert tuple(net.variables["LSTM"].variable_instance.shape) == (2, 5, 8)
    finally:
        nn.clear_parameters()
