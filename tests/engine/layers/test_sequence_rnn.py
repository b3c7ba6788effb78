"""nnabla's fused recurrent functions as layers (issue 17): LSTMSequence, GRUSequence, RNNSequence.

Each reads a per-sample (time, features) sequence, runs nnabla's F.lstm/gru/rnn time first with nnabla's own
parameter names and shapes, and gives every step's hidden state or the last one; checked against nnabla's
function called directly (and, for RNN, numpy), trained on the sine_rnn template's data, and exported to an
.nntxt that nnabla's loader computes identically and ``nnabla_cli train`` runs."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nnconsole.engine.project.model import Layer, Network
from nnconsole.engine.network.shapes import infer_network
from nnconsole.engine.check.project_file import load_valid_project
from tests.support.paths import TEMPLATES

NNABLA_CLI = os.path.join(os.path.dirname(sys.executable), "nnabla_cli")
TYPES = ("LSTMSequence", "GRUSequence", "RNNSequence")


def _network(type_: str, params: dict, shape=(5, 3)) -> Network:
    return Network([Layer("x", "Input", params={"shape": list(shape)}), Layer("r", type_, ["x"], dict(params))])


def _forward(network: Network, x: np.ndarray):
    """The engine's runtime output for ``x`` and the parameters it created (name -> array)."""
    import nnabla as nn

    from nnconsole.engine.runtime.graph import build_graph

    nn.clear_parameters()
    built = build_graph(network, x.shape[0], "runtime", rng=np.random.RandomState(0))
    built.inputs["x"].d = x
    built.outputs["r"].forward()
    return built.outputs["r"].d.copy(), {k: v.d.copy() for k, v in nn.get_parameters().items()}


@pytest.mark.parametrize("type_", TYPES)
def test_shapes_parameters_and_costs_follow_nnabla(type_):
    """Inferred output and weight shapes are the ones nnabla creates (names '<layer>/<lstm|gru|rnn>/...');
    the parameter count and the multiply-adds follow from them."""
    kind = type_[:-len("Sequence")].lower()
    gates = {"lstm": 4, "gru": 3, "rnn": 1}[kind]
    for params, out in (({"hidden_size": 4}, (5, 4)),
                        ({"hidden_size": 3, "num_layers": 2, "bidirectional": True}, (5, 6)),
                        ({"hidden_size": 3, "num_layers": 2, "bidirectional": True, "output": "last_state"}, (6,))):
        network = _network(type_, params)
        info = infer_network(network)
        li = info.layers["r"]
        assert info.errors == [] and li.out_shape == out
        y, created = _forward(network, np.random.RandomState(1).randn(2, 5, 3))
        assert y.shape == (2,) + out
        assert {f"r/{kind}/{k}": s for k, s in li.weight_shapes.items()} == {k: v.shape for k, v in created.items()}
        assert li.n_params == sum(v.size for v in created.values())
        h, d, layers = params["hidden_size"], 2 if params.get("bidirectional") else 1, params.get("num_layers", 1)
        assert li.macs == 5 * d * sum(gates * h * ((3 if n == 0 else d * h) + h) for n in range(layers))


@pytest.mark.parametrize("type_", TYPES)
def test_output_equals_nnablas_function_run_time_first(type_):
    """Two stacked bidirectional layers: the layer's (B, T, D*H) equals F.lstm/gru/rnn on the time-first input
    with zero initial states and the same weights, transposed back (within 1e-5); the last state is the last
    layer's final h of both directions."""
    import nnabla as nn
    import nnabla.functions as F

    params = {"hidden_size": 3, "num_layers": 2, "bidirectional": True}
    x = np.random.RandomState(2).randn(4, 5, 3).astype(np.float32)
    y, weights = _forward(_network(type_, params), x)
    last, _ = _forward(_network(type_, dict(params, output="last_state")), x)
    kind = type_[:-len("Sequence")].lower()
    w = {k.rsplit("/", 1)[1]: nn.Variable.from_numpy_array(v) for k, v in weights.items()}
    xt = nn.Variable.from_numpy_array(x.transpose(1, 0, 2))
    zeros = nn.Variable.from_numpy_array(np.zeros((2, 2, 4, 3), np.float32))
    args = dict(weight_l0=w["weight_l0"], weight=w["weight"], bias=w["bias"], num_layers=2, bidirectional=True,
                training=False)
    outs = F.lstm(xt, zeros, zeros, **args) if kind == "lstm" else getattr(F, kind)(xt, zeros, **args)
    F.sink(*outs).forward()
    ref_y, ref_h = outs[0].d.transpose(1, 0, 2), outs[1].d
    assert np.abs(y - ref_y).max() < 1e-5
    assert np.abs(last - ref_h[1].transpose(1, 0, 2).reshape(4, 6)).max() < 1e-5
    nn.clear_parameters()


@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_rnn_equals_a_numpy_elman_network(nonlinearity):
    """h_t = act(W [x_t, h_{t-1}] + b) from h_0 = 0 (nnabla's weight_l0 is (D, H, I + H), inputs first)."""
    x = np.random.RandomState(3).randn(2, 6, 3).astype(np.float32)
    y, weights = _forward(_network("RNNSequence", {"hidden_size": 4, "nonlinearity": nonlinearity}, (6, 3)), x)
    w, b = weights["r/rnn/weight_l0"][0], weights["r/rnn/bias"][0, 0]
    act = np.tanh if nonlinearity == "tanh" else (lambda v: np.maximum(v, 0))
    h = np.zeros((2, 4), np.float32)
    expected = []
    for t in range(6):
        h = act(np.concatenate([x[:, t], h], axis=1) @ w.T + b)
        expected.append(h)
    assert np.abs(y - np.stack(expected, axis=1)).max() < 1e-5


def test_bad_input_shape_is_named():
    info = infer_network(_network("LSTMSequence", {}, (5, 3, 2)))
    assert info.layers["r"].out_shape is None
    assert any("(time, features)" in msg for _name, msg in info.errors), info.errors


def _sine_lstm_project(tmp_path: Path, type_: str = "LSTMSequence"):
    """The sine_rnn template's data with its Elman block replaced by one fused layer's last state."""
    import shutil


    folder = tmp_path / "sine"
    shutil.copytree(os.path.join(TEMPLATES, "sine_rnn"), folder)
    project = load_valid_project(str(folder / "project.yaml"))
    project.network = Network([
        Layer("x", "Input", params={"shape": [16, 1], "variable": "x"}),
        Layer("rnn", type_, ["x"], {"hidden_size": 8, "output": "last_state"}),
        Layer("out", "Affine", ["rnn"], {"out_shape": [1]}),
        Layer("y", "Input", params={"shape": [1], "variable": "y"}),
        Layer("loss", "SquaredError", ["out", "y"]),
    ])
    project.config.max_epoch = 1
    return project


@pytest.mark.slow
@pytest.mark.parametrize("type_", TYPES)
def test_a_sequence_regression_trains_one_epoch(tmp_path, type_):
    """The next value of the template's noisy sine waves from 16 steps: one epoch of training lowers the loss."""
    from nnconsole.engine.project.io import save_project
    from tests.support.training import train_in_process

    project = _sine_lstm_project(tmp_path, type_)
    save_project(project, str(tmp_path / "sine" / "project.yaml"))
    run_dir, losses = train_in_process(project, str(tmp_path / "runs"))
    assert len(losses) >= 2 and all(np.isfinite(losses)) and losses[-1] < losses[0], losses
    _runtime_model_runs_at_any_batch_size(os.path.join(run_dir, "model_final.nnp"))


def _runtime_model_runs_at_any_batch_size(path: str) -> None:
    """The run's .nnp under nnabla's NnpLoader at batch sizes 1 and 5 gives each sample the same output (no batch
    size is baked into the zero initial states or the last-state reshape)."""
    from nnabla.utils.nnp_graph import NnpLoader

    import nnabla as nn

    x = np.random.RandomState(5).randn(5, 16, 1).astype(np.float32)
    outs = []
    for batch in (1, 5):
        nnp = NnpLoader(path)  # one loader per batch size: nnabla keeps a network's functions once created
        net = nnp.get_network(nnp.get_network_names()[0], batch_size=batch)
        xv, yv = net.inputs["x"], net.outputs["y'"]  # (the fused function's unused outputs are listed too)
        xv.d = x[:batch]
        yv.forward()
        outs.append(yv.d.copy())
    nn.clear_parameters()
    assert np.abs(outs[0] - outs[1][:1]).max() < 1e-5


@pytest.mark.parametrize("params", [{"hidden_size": 3, "num_layers": 2, "bidirectional": True},
                                    {"hidden_size": 3, "num_layers": 2, "bidirectional": True,
                                     "output": "last_state"},
                                    {"hidden_size": 4, "output": "last_state"}],
                         ids=["sequence", "last_state", "one_layer_last_state"])
@pytest.mark.parametrize("type_", TYPES)
def test_exported_nntxt_computes_what_the_engine_does(tmp_path, type_, params):
    """The .nntxt (Transpose, zero states from the input, LSTM/GRU/RNN, Transpose or Split/Transpose/Reshape)
    loaded by nnabla's own loader at another batch size gives the engine's output for the same weights."""
    import nnabla as nn
    from nnabla.utils import nnabla_pb2
    from google.protobuf import text_format
    from nnabla.utils.load import load

    from nnconsole.engine.interop.files import export_nntxt
    from nnconsole.engine.project.model import Datasets, Project
    from tests.support.networks import single_layer_network

    project = Project(name="one", network=Network(single_layer_network(type_, params, [(5, 3)])),
                      datasets=Datasets(training="a.csv", validation="a.csv"))
    path = tmp_path / "one.nntxt"
    export_nntxt(project, str(path))
    proto = text_format.Parse(path.read_text(), nnabla_pb2.NNablaProtoBuf())
    runtime = next(n for n in proto.network if n.name == "MainRuntime")
    fused = next(f for f in runtime.function if f.type == type_[:-len("Sequence")].upper())
    assert fused.input[0] == "layer/time_first" and fused.input[-1] == f"layer/{fused.type.lower()}/bias"
    x = np.random.RandomState(4).randn(3, 5, 3).astype(np.float32)
    expected, weights = _forward(_network(type_, params), x)
    nn.clear_parameters()
    try:
        info = load([str(path)], prepare_data_iterator=False, batch_size=3)
        for name, value in weights.items():
            nn.get_parameters()[name.replace("r/", "layer/", 1)].d = value
        net = info.networks["MainRuntime"]
        net.variables["in0"].variable_instance.d = x
        out = net.variables["layer"].variable_instance
        out.forward()
        assert np.abs(out.d - expected).max() < 1e-5
    finally:
        nn.clear_parameters()


@pytest.mark.slow
def test_exported_lstm_project_trains_under_nnabla_cli(tmp_path):
    from nnconsole.engine.interop.files import export_nntxt

    project = _sine_lstm_project(tmp_path)
    out = tmp_path / "sine" / "lstm.nntxt"
    assert export_nntxt(project, str(out)).unsupported == []
    (tmp_path / "train").mkdir()
    proc = subprocess.run([NNABLA_CLI, "train", "-c", str(out), "-o", str(tmp_path / "train")], capture_output=True,
                          text=True, timeout=240, cwd=tmp_path, env=dict(os.environ, OMP_NUM_THREADS="1"))
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Training Completed" in log, log[-3000:]
    assert "valid_error=" in log


@pytest.mark.parametrize("params", [{"hidden_size": 3, "num_layers": 2, "bidirectional": True, "dropout": 0.25},
                                    {"hidden_size": 4, "output": "last_state"},
                                    {"hidden_size": 3, "num_layers": 3, "output": "last_state"}],
                         ids=["sequence", "one_layer_last_state", "three_layers_last_state"])
@pytest.mark.parametrize("type_", TYPES)
def test_nntxt_round_trip_gives_the_layer_back(tmp_path, type_, params):
    """nnabla's functions around LSTM/GRU/RNN (as exported) import as one layer with its parameters and its
    weights under nnabla's names; nothing is reported."""
    from nnconsole.engine.interop.files import export_nntxt, import_file
    from nnconsole.engine.layers import resolve_params
    from nnconsole.engine.project.model import Datasets, Project
    from tests.support.networks import single_layer_network

    if type_ == "RNNSequence":
        params = dict(params, nonlinearity="relu")
    project = Project(name="one", network=Network(single_layer_network(type_, params, [(5, 3)])),
                      datasets=Datasets(training="a.csv", validation="a.csv"))
    path = tmp_path / "one.nntxt"
    export_nntxt(project, str(path), with_extras=False)
    result = import_file(str(path))
    layers = {layer.name: layer for layer in result.project.network.layers}
    assert layers["layer"].type == type_ and layers["layer"].inputs == ["in0"], layers
    assert resolve_params(type_, layers["layer"].params) == resolve_params(type_, params)
    assert sorted(layers) == ["in0", "layer", "loss", "target"]
    assert result.unsupported == []
    info = infer_network(result.project.network)
    assert info.errors == [] and info.total_params == infer_network(project.network).total_params


def test_an_lstm_function_read_time_first_is_reported_not_guessed(tmp_path):
    """nnabla's LSTM on a time-first input with no Transpose around it is not a batch-first layer: reported."""
    from nnconsole.engine.interop.files import import_file

    path = tmp_path / "raw.nntxt"
    path.write_text('''
network { name: "Main" batch_size: 2
  variable { name: "x" type: "Buffer" shape { dim: 5 dim: -1 dim: 3 } }
  variable { name: "h" type: "Buffer" shape { dim: 1 dim: 1 dim: -1 dim: 4 } }
  variable { name: "c" type: "Buffer" shape { dim: 1 dim: 1 dim: -1 dim: 4 } }
  variable { name: "r/lstm/weight_l0" type: "Parameter" shape { dim: 1 dim: 4 dim: 4 dim: 7 } }
  variable { name: "y" type: "Buffer" shape { dim: 5 dim: -1 dim: 4 } }
  variable { name: "hn" type: "Buffer" shape { dim: 1 dim: 1 dim: -1 dim: 4 } }
  variable { name: "cn" type: "Buffer" shape { dim: 1 dim: 1 dim: -1 dim: 4 } }
  function { name: "r" type: "LSTM" input: "x" input: "h" input: "c" input: "r/lstm/weight_l0"
             output: "y" output: "hn" output: "cn" lstm_param { num_layers: 1 } }
}
''')
    result = import_file(str(path))
    assert any("'r' (LSTM)" in u and "LSTMSequence" in u for u in result.unsupported), result.unsupported


def test_sdcproj_export_says_nnc_has_no_such_layer(tmp_path):
    """NNC cannot run nnabla's fused functions: the .sdcproj export says so once, pointing to .nntxt (not a line
    per parameter that NNC 'uses its default' for)."""
    from nnconsole.engine.interop.sdcproj.exporter import export_sdcproj

    project = _sine_lstm_project(tmp_path)
    result = export_sdcproj(project, str(tmp_path / "sine.sdcproj"))
    lines = [u for u in result.unsupported if "'rnn'" in u]
    assert lines == ["layer 'rnn' (LSTMSequence): NNC has no such layer (nnabla's fused F.lstm), so NNC cannot run "
                     "it; export the project as .nntxt instead"], result.unsupported


def test_a_gru_from_constant_zero_states_imports_as_one_layer(tmp_path):
    """A file written by hand (or another tool) with Constant 0 initial states is read the same way; a Constant of
    another value is not a zero state, so that GRU is left as it is and reported."""
    from nnconsole.engine.interop.files import import_file

    def text(value: float) -> str:
        return f'''
network {{ name: "Main" batch_size: 2
  variable {{ name: "x" type: "Buffer" shape {{ dim: -1 dim: 5 dim: 3 }} }}
  variable {{ name: "xt" type: "Buffer" shape {{ dim: 5 dim: -1 dim: 3 }} }}
  variable {{ name: "h0" type: "Buffer" shape {{ dim: 1 dim: 1 dim: 2 dim: 4 }} }}
  variable {{ name: "g/gru/weight_l0" type: "Parameter" shape {{ dim: 1 dim: 3 dim: 4 dim: 7 }} }}
  variable {{ name: "g/gru/bias" type: "Parameter" shape {{ dim: 1 dim: 1 dim: 4 dim: 4 }} }}
  variable {{ name: "y" type: "Buffer" shape {{ dim: 5 dim: -1 dim: 4 }} }}
  variable {{ name: "hn" type: "Buffer" shape {{ dim: 1 dim: 1 dim: -1 dim: 4 }} }}
  variable {{ name: "g" type: "Buffer" shape {{ dim: -1 dim: 5 dim: 4 }} }}
  function {{ name: "t" type: "Transpose" input: "x" output: "xt" transpose_param {{ axes: 1 axes: 0 axes: 2 }} }}
  function {{ name: "z" type: "Constant" output: "h0"
             constant_param {{ val: {value} shape {{ dim: 1 dim: 1 dim: 2 dim: 4 }} }} }}
  function {{ name: "gru" type: "GRU" input: "xt" input: "h0" input: "g/gru/weight_l0" input: "g/gru/bias"
             output: "y" output: "hn" gru_param {{ num_layers: 1 }} }}
  function {{ name: "g" type: "Transpose" input: "y" output: "g" transpose_param {{ axes: 1 axes: 0 axes: 2 }} }}
}}
'''
    path = tmp_path / "gru.nntxt"
    path.write_text(text(0.0))
    result = import_file(str(path))
    layers = {layer.name: layer for layer in result.project.network.layers}
    assert sorted(layers) == ["g", "x"] and layers["g"].type == "GRUSequence" and layers["g"].inputs == ["x"]
    assert layers["g"].params["hidden_size"] == 4 and layers["g"].params["output"] == "sequence"
    path.write_text(text(0.5))
    result = import_file(str(path))
    assert "GRUSequence" not in [layer.type for layer in result.project.network.layers]
    assert any(u.startswith("layer 'gru' (GRU): nnabla's GRU is read as a GRUSequence layer only when")
               for u in result.unsupported), result.unsupported


@pytest.mark.mpi
@pytest.mark.slow
def test_two_workers_train_an_lstm_as_one_worker_with_the_same_logical_batch(tmp_path):
    """1 worker x batch 16 and 2 workers x batch 8 (mpiexec -n 2) end with the same LSTM weights (the tolerance of
    tests/system/test_multiworker.py): the fused function's gradients are all-reduced like any other parameter's."""
    import json

    import yaml

    from nnconsole.engine.project.io import save_project
    from tests.support.cli import run_dir_from
    from tests.support.training import final_params, max_relative_error

    runs = []
    for name, batch, workers in (("one", 16, 1), ("two", 8, 2)):
        project = _sine_lstm_project(tmp_path / name)
        path = tmp_path / name / "sine" / "project.yaml"
        save_project(project, str(path))
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        data["config"].update(max_epoch=1, batch_size=batch, device="cpu")
        data["multi_gpu"] = {"workers": workers, "scaling": "none"}
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        proc = subprocess.run([sys.executable, "-m", "nnconsole", "train", str(path), "-q", "-o", str(tmp_path / "runs")],
                              capture_output=True, text=True, timeout=300, cwd=tmp_path,
                              env=dict(os.environ, OMP_NUM_THREADS="1"))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        runs.append(run_dir_from(proc.stdout))
    assert json.load(open(os.path.join(runs[1], "plan.json")))["workers"] == 2
    reference, other = final_params(runs[0]), final_params(runs[1])
    assert sorted(reference) == ["out/affine/W", "out/affine/b", "rnn/lstm/bias", "rnn/lstm/weight_l0"]
    assert max_relative_error(reference, other) <= 1e-5
