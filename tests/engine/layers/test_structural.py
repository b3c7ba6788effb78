"""Issue 16, NNC's palette categories Basic, Pooling, Normalization, Quantize, Spectral and Others:
every type is registered (or listed below with the reason it is not), each registered type's
examples round-trip through .nntxt, import from .sdcproj with NNC's properties, compute what
nnabla/numpy compute, and train one iteration through nnabla.

The registry-wide tests check these types too: NNC property names and defaults and nnabla's function
metadata (tests/engine/layers/test_registry.py), shapes against nnabla's own graph
(tests/engine/runtime/test_graph.py) and nnabla's .nntxt loader
(tests/engine/layers/test_registry.py::test_exported_nntxt_builds_in_nnabla_with_the_inferred_shape).
"""
from __future__ import annotations

import os

import numpy as np
import pytest

from nnconsole.engine.interop import mapping
from nnconsole.engine.layers import get_spec
from nnconsole.engine.project.model import Datasets, Layer, Network, Project
from tests.support import nnc_reference
from tests.support.networks import single_layer_network
from nnconsole.engine.check.project_file import load_valid_project

CATEGORIES = ("Basic", "Pooling", "Normalization", "Quantize", "Spectral", "Others")

# Palette entries of these categories that nnconsole does not register, and why.
LEFT_OUT = {
    "Comment": "a canvas note, not a function: kept as the network's comments (Network.comments), outside the graph",
    "Output": "hidden in NNC's own palette (Hidden=True): it names a runtime output; nnconsole's runtime outputs "
              "are the loss inputs",
    "Unsupported": "hidden in NNC's own palette (Hidden=True): NNC's placeholder for a layer its editor cannot read",
    "DeformableConvolution": "nnabla 1.39's CPU backward crashes the process (segfault, measured) when the offset "
                             "input needs no gradient (a dataset variable, or any data input under nnabla_cli); "
                             "registering it needs a guard in nnconsole's graph and in exported .nntxt first",
}


def _category_types():
    palette = nnc_reference.palette()
    return [(c, t) for c in CATEGORIES for t in palette[c]]


def _specs():
    """The registered types of these categories (palette order)."""
    return [get_spec(mapping.registry_type(t)) for _c, t in _category_types() if mapping.registry_type(t)]


def test_every_palette_type_of_these_categories_is_registered_or_left_out_with_a_reason():
    missing = [t for _c, t in _category_types() if mapping.registry_type(t) is None and t not in LEFT_OUT]
    assert missing == []
    stale = [t for t in LEFT_OUT if mapping.registry_type(t) is not None]
    assert stale == [], "registered now: drop them from LEFT_OUT"
    assert len(_specs()) >= 50
    for spec in _specs():  # each in its NNC category's palette group
        category = nnc_reference.layer(spec.nnc_name).category
        assert spec.group == {"Others": "Other"}.get(category, category), spec.type


def _project(layers):
    return Project(name="one", network=Network(layers), datasets=Datasets(training="a.csv", validation="a.csv"))


@pytest.mark.parametrize("spec", _specs(), ids=lambda s: s.type)
def test_examples_round_trip_through_nntxt(tmp_path, spec):
    """Each example exported to .nntxt and imported again is the same layer with the same parameters."""
    from nnconsole.engine.interop.files import import_file
    from nnconsole.engine.interop.nntxt.exporter import export_nntxt
    from tests.support.networks import same_network

    layers = []
    for k, (params, shapes) in enumerate(spec.example_cases()):
        layers += single_layer_network(spec.type, params, shapes, prefix=f"c{k}_")
    project = _project(layers)
    path = str(tmp_path / "one.nntxt")
    export_nntxt(project, path)
    back = import_file(path)
    assert [u for u in back.unsupported if "layer" in u and "iter_per_epoch" not in u] == []
    same_network(project.network, back.project.network)
    if spec.export_as:  # written as an equivalent nnabla function (Broadcast as a Tile), restored from the
        from nnconsole.engine.network.shapes import infer_network  # extras comment; a file without it has the Tile
        export_nntxt(project, path, with_extras=False)
        plain = import_file(path).project.network
        ours, theirs = infer_network(project.network), infer_network(plain)
        for layer in plain.layers:
            assert layer.type in ("Input", "SquaredError", spec.export_as), layer.type
            assert ours.layers[layer.name].out_shape == theirs.layers[layer.name].out_shape


# NNC properties (as NNC writes them) -> the parameters nnconsole reads from them.
SDCPROJ_CASES = [
    ("DepthwiseConvolution", [4, 8, 8], {"KernelShape": "3,3", "BorderMode": "same", "Padding": "*ConvolutionPaddingSize",
                                         "Multiplier": "2", "OutMaps": "Input[0]*Multiplier", "Group": "Input[0]",
                                         "Strides": "2,2"},
     {"kernel": [3, 3], "pad": [1, 1], "multiplier": 2, "stride": [2, 2]}, (8, 4, 4)),
    ("DepthwiseDeconvolution", [4, 4, 4], {"KernelShape": "2,2", "Strides": "2,2", "Divisor": "2",
                                           "OutMaps": "Input[0]/Divisor", "Group": "Input[0]"},
     {"kernel": [2, 2], "stride": [2, 2], "divisor": 2}, (2, 8, 8)),
    ("BinaryConnectConvolution", [3, 6, 6], {"OutMaps": "8", "KernelShape": "3,3", "BorderMode": "same",
                                             "Padding": "*ConvolutionPaddingSize"},
     {"outmaps": 8, "kernel": [3, 3], "pad": [1, 1]}, (8, 6, 6)),
    ("BinaryWeightAffine", [3, 4], {"OutShape": "10", "WithBias": "False"}, {"out_shape": [10], "with_bias": False},
     (10,)),
    ("GroupNormalization", [8, 3, 3], {"NumGroups": "2", "Epsilon": "0.001", "BatchAxis": "-1"},
     {"num_groups": 2, "eps": 0.001}, (8, 3, 3)),
    ("Transpose", [2, 3, 4], {"Axes": "2,0,1"}, {"axes": [2, 0, 1]}, (4, 2, 3)),
    ("Pad", [3, 4], {"PadWidth": "1,2", "Mode": "reflect"}, {"pad_width": [1, 2], "mode": "reflect"}, (3, 7)),
    ("Shift", [2, 5, 5], {"Shift": "1,-2", "BorderMode": "reflect"}, {"shifts": [1, -2], "border_mode": "reflect"},
     (2, 5, 5)),
    ("SumPooling", [2, 6, 6], {"KernelShape": "3,3", "Strides": "*KernelShape"}, {"kernel": [3, 3]}, (2, 2, 2)),
    ("FFT", [4, 4, 2], {"SignalNDim": "2", "Normalized": "True"}, {"signal_ndim": 2, "normalized": True}, (4, 4, 2)),
]


@pytest.mark.parametrize("type_,size,props,expected,out_shape", SDCPROJ_CASES, ids=[c[0] for c in SDCPROJ_CASES])
def test_sdcproj_import_reads_nncs_properties(tmp_path, type_, size, props, expected, out_shape):
    """A .sdcproj layer with NNC's non-default properties imports with them (computed ones understood), and
    the network is one `info` accepts."""
    from nnconsole.engine.interop.files import import_file
    from nnconsole.engine.network.shapes import infer_network
    from tests.support.nnc_files import sdcproj_text

    path = tmp_path / "one.sdcproj"
    path.write_text(sdcproj_text([("x", "Input", {"Size": ",".join(map(str, size)), "Dataset": "x"}, []),
                                  ("L", type_, props, ["x"]),
                                  ("loss", "SquaredError", {"T.Dataset": "y"}, ["L"])]), newline="")
    result = import_file(str(path))
    layer = result.project.network.layer("L")
    assert layer.type == type_ and [u for u in result.unsupported if "'L'" in u] == []
    for key, value in expected.items():
        got = layer.params[key]
        assert (list(got) if isinstance(got, (list, tuple)) else got) == value, key
    info = infer_network(result.project.network)
    assert info.ok, info.errors
    assert info.layers["L"].out_shape == out_shape


def test_sdcproj_import_reports_what_it_cannot_use(tmp_path):
    """GroupNormalization over the batch (BatchAxis 0) is said, not silently changed."""
    from nnconsole.engine.interop.files import import_file
    from tests.support.nnc_files import sdcproj_text

    path = tmp_path / "one.sdcproj"
    path.write_text(sdcproj_text([("x", "Input", {"Size": "4,3,3", "Dataset": "x"}, []),
                                  ("L", "GroupNormalization", {"BatchAxis": "0", "NumGroups": "2"}, ["x"]),
                                  ("loss", "SquaredError", {"T.Dataset": "y"}, ["L"])]), newline="")
    assert any("BatchAxis=0" in u for u in import_file(str(path)).unsupported)


def _forward(type_, params, *arrays):
    import nnabla as nn

    from nnconsole.engine.runtime.graph import build_graph

    layers = single_layer_network(type_, params, [a.shape[1:] for a in arrays])
    nn.clear_parameters()
    built = build_graph(Network(layers), arrays[0].shape[0], "validation")
    for i, a in enumerate(arrays):
        built.inputs[f"in{i}"].d = a
    built.outputs["layer"].forward()
    return built.outputs["layer"].d.copy(), built


def test_values_match_numpy():
    """Computed as nnabla/numpy define them, the batch axis left alone."""
    import nnabla.functions as F

    rng = np.random.RandomState(0)
    x = rng.rand(2, 3, 4, 5).astype(np.float32)
    assert np.allclose(_forward("Transpose", {"axes": [2, 0, 1]}, x)[0], x.transpose(0, 3, 1, 2))
    assert np.allclose(_forward("Flip", {"axes": [0, 2]}, x)[0], x[:, ::-1, :, ::-1])
    assert np.allclose(_forward("Tile", {"reps": [2, 1]}, x)[0], np.tile(x, (1, 1, 2, 1)))
    assert np.allclose(_forward("Broadcast", {"shape": [3, 4, 5]}, x[:, :, :1])[0], np.repeat(x[:, :, :1], 4, axis=2))
    assert np.allclose(_forward("Stack", {"axis": 1}, x, x + 1)[0], np.stack([x, x + 1], axis=2))
    assert np.allclose(_forward("Pad", {"pad_width": [1, 2]}, x)[0], np.pad(x, [(0, 0)] * 3 + [(1, 2)]))
    assert np.allclose(_forward("Sort", {"axis": 0}, x)[0], np.sort(x, axis=1))
    assert np.allclose(_forward("SumPooling", {"kernel": [2, 2]}, x)[0],
                       x[:, :, :4, :4].reshape(2, 3, 2, 2, 2, 2).sum(axis=(3, 5)))
    assert np.allclose(_forward("TopKData", {"k": 2}, x)[0], -np.sort(-x.reshape(2, -1), axis=1)[:, :2])
    c = rng.rand(2, 4, 6, 2).astype(np.float32)
    z = c[..., 0] + 1j * c[..., 1]
    for type_, fn in (("FFT", np.fft.fftn), ("IFFT", np.fft.ifftn)):
        for normalized in (False, True):
            out = _forward(type_, {"normalized": normalized}, c)[0]
            ref = fn(z, axes=(-2, -1), norm="ortho" if normalized else "backward")
            assert np.allclose(out[..., 0] + 1j * out[..., 1], ref, atol=1e-4), (type_, normalized)
    # DepthwiseConvolution is a grouped convolution with one group per channel
    out, built = _forward("DepthwiseConvolution", {"kernel": [3, 3], "multiplier": 2}, x)
    w, b = (built.parameters[f"layer/depthwise_conv/{k}"] for k in ("W", "b"))
    import nnabla as nn
    ref = F.convolution(nn.Variable.from_numpy_array(x), w.reshape((6, 1, 3, 3)), b, group=3)
    ref.forward()
    assert np.allclose(out, ref.d, atol=1e-5)
    # BinaryConnectAffine multiplies by the sign of W
    out, built = _forward("BinaryConnectAffine", {"out_shape": [3], "with_bias": False}, x[:, 0])
    w = built.parameters["layer/bicon_affine/W"].d
    assert np.allclose(out, x[:, 0].reshape(2, -1) @ np.where(w >= 0, 1.0, -1.0), atol=1e-4)


def _chain_type(name: str) -> str:
    """'binaryconnectaffine0_in0' -> 'binaryconnectaffine' (the lowercase type of its chain)."""
    return name.split("_")[0].rstrip("0123456789")


def _input_data(chain, shape, rng):
    if chain.startswith("binary"):  # signs matter: centre on zero
        return rng.rand(*shape) - 0.5
    if chain == "minmaxquantize":  # its range -6..6 learns from the values outside it
        return (rng.rand(*shape) - 0.5) * 20
    return rng.rand(*shape) + 0.1


def test_every_type_trains_one_iteration_through_nnabla():
    """One network holding every registered type of these categories (each example as its own chain
    into a SquaredError): one SGD step lowers nothing to NaN and changes each learned weight."""
    import nnabla as nn
    import nnabla.solvers as S

    from nnconsole.engine.runtime.graph import build_graph

    layers = []
    for spec in _specs():
        for k, (params, shapes) in enumerate(spec.example_cases()):
            layers += single_layer_network(spec.type, params, shapes, prefix=f"{spec.type.lower()}{k}_")
    rng = np.random.RandomState(1)
    nn.clear_parameters()
    try:
        built = build_graph(Network(layers), 2, "train")
        for var, v in built.inputs.items():
            v.d = _input_data(_chain_type(var), v.shape, rng)
        learned = {k: p for k, p in nn.get_parameters(grad_only=True).items()}
        before = {k: p.d.copy() for k, p in learned.items()}
        solver = S.Sgd(0.1)
        solver.set_parameters(learned)
        built.loss.forward()
        solver.zero_grad()
        built.loss.backward()
        solver.update()
        assert np.isfinite(built.loss.d).all()
        owners = {_chain_type(built.param_owner[k][0]) for k in learned}
        unchanged = [k for k, p in learned.items() if np.array_equal(p.d, before[k])]
    finally:
        nn.clear_parameters()
    parametric = {s.type.lower() for s in _specs() if s.weights and set(s.weights) - set(s.non_trainable)}
    assert parametric <= owners
    assert unchanged == []


def test_parameter_and_multiply_add_counts_follow_nncs_conventions():
    """CostParameter: learned weights only (binary layers: W and b, not the binarised copy Wb or the scale
    alpha; SpectralNorm's u is not learned); CostMultiplyAdd: convolutions count output x kernel x input
    channels per group (depthwise: one channel), binary layers none (NNC counts their sign flips as adds)."""
    from nnconsole.engine.network.shapes import infer_network

    def counts(type_, params, shape):
        info = infer_network(Network(single_layer_network(type_, params, [shape])))
        assert info.ok, info.errors
        return info.layers["layer"].n_params, info.layers["layer"].macs

    assert counts("DepthwiseConvolution", {"kernel": [3, 3], "multiplier": 2}, (4, 8, 8)) == \
        (8 * 9 + 8, 8 * 6 * 6 * 9)
    assert counts("DepthwiseDeconvolution", {"kernel": [2, 2], "stride": [2, 2], "divisor": 2}, (4, 3, 3)) == \
        (4 * 4 + 2, 4 * 3 * 3 * 4)
    assert counts("BinaryConnectAffine", {"out_shape": [5]}, (3, 4)) == (12 * 5 + 5, 0)
    assert counts("BinaryWeightConvolution", {"outmaps": 4, "kernel": [3, 3]}, (2, 5, 5)) == (4 * 2 * 9 + 4, 0)
    assert counts("GroupNormalization", {"num_groups": 2}, (4, 3, 3)) == (8, 36)
    assert counts("SpectralNorm", {}, (3, 4)) == (0, 0)
    assert counts("WeightNormalization", {"dim": 1}, (3, 4)) == (4, 0)
    assert counts("MinMaxQuantize", {}, (3, 4)) == (2, 0)


def test_nnc_written_broadcast_and_transpose_import_from_nntxt(tmp_path):
    """NNC writes nnabla's own Broadcast (shape with the batch size) and Transpose (axes with the batch
    axis): both import with nnconsole's batch-free parameters."""
    from nnconsole.engine.interop.files import import_file

    path = tmp_path / "nnc.nntxt"
    path.write_text('''
network { name: "Main" batch_size: 4
  variable { name: "x" type: "Buffer" shape { dim: -1 dim: 3 dim: 1 } }
  variable { name: "b" type: "Buffer" shape { dim: -1 dim: 3 dim: 5 } }
  variable { name: "t" type: "Buffer" shape { dim: -1 dim: 5 dim: 3 } }
  variable { name: "y" type: "Buffer" shape { dim: -1 dim: 5 dim: 3 } }
  variable { name: "loss" type: "Buffer" shape { dim: -1 dim: 5 dim: 3 } }
  function { name: "b" type: "Broadcast" input: "x" output: "b" broadcast_param { shape { dim: 4 dim: 3 dim: 5 } } }
  function { name: "t" type: "Transpose" input: "b" output: "t" transpose_param { axes: 0 axes: 2 axes: 1 } }
  function { name: "loss" type: "SquaredError" input: "t" input: "y" output: "loss" }
}
''')
    result = import_file(str(path))
    network = result.project.network
    assert network.layer("b").type == "Broadcast" and list(network.layer("b").params["shape"]) == [3, 5]
    assert list(network.layer("t").params["axes"]) == [1, 0]


def test_cli_imports_an_nnc_mobilenet_style_project_that_info_accepts(tmp_path, capsys):
    """`nnconsole import` of a .sdcproj built from this issue's types (NNC's properties as NNC writes
    them), then `nnconsole info`: accepted, with NNC's parameter count."""
    from nnconsole.engine.cli.main import main
    from tests.support.nnc_files import sdcproj_text

    same = {"BorderMode": "same", "Padding": "*ConvolutionPaddingSize"}
    layers = [("x", "Input", {"Size": "3,16,16", "Dataset": "x"}, []),
              ("dw", "DepthwiseConvolution", {"KernelShape": "3,3", "Multiplier": "2", "OutMaps": "Input[0]*Multiplier",
                                              "Group": "Input[0]", **same}, ["x"]),
              ("gn", "GroupNormalization", {"NumGroups": "3", "BatchAxis": "-1"}, ["dw"]),
              ("bc", "BinaryConnectConvolution", {"OutMaps": "8", "KernelShape": "3,3", **same}, ["gn"]),
              ("bt", "BinaryTanh", {}, ["bc"]),
              ("sp", "SumPooling", {"KernelShape": "2,2", "Strides": "*KernelShape"}, ["bt"]),
              ("tr", "Transpose", {"Axes": "0,2,1"}, ["sp"]),
              ("pad", "Pad", {"PadWidth": "1,1,1,1"}, ["tr"]),
              ("gap", "GlobalAveragePooling", {}, ["pad"]),
              ("fc", "BinaryWeightAffine", {"OutShape": "10"}, ["gap"]),
              ("loss", "SoftmaxCrossEntropy", {"T.Dataset": "y"}, ["fc"])]
    path = tmp_path / "mobile.sdcproj"
    path.write_text(sdcproj_text(layers), newline="")
    out = tmp_path / "mobile.yaml"
    assert main(["import", str(path), "-o", str(out)]) == 0
    imported = capsys.readouterr().out
    assert "not carried over" not in imported, imported
    assert main(["info", str(out)]) == 0
    printed = capsys.readouterr().out
    n_params = (6 * 9 + 6) + 2 * 6 + (8 * 6 * 9 + 8) + (8 * 10 + 10)
    assert f"{n_params:,}" in printed or str(n_params) in printed


def test_a_binary_network_trains_through_the_real_trainer(tmp_path):
    """BinaryConnectAffine -> FusedBatchNormalization -> BinaryTanh -> BinaryWeightAffine on the tabular
    data: nnconsole's Trainer (validation, checkpoints, running statistics) runs it with a finite, falling loss."""
    import math

    from nnconsole.engine.project.io import save_project
    from nnconsole.engine.project.model import Layer
    from tests.support.projects import tabular_project
    from tests.support.training import train_in_process

    path = tabular_project(str(tmp_path / "p"), n=64, batch=8, epochs=4, solver="Adam", lr=0.01)
    project = load_valid_project(path)
    project.network = Network([
        Layer("x", "Input", params={"shape": [4]}),
        Layer("bc", "BinaryConnectAffine", ["x"], {"out_shape": [32]}),
        Layer("bn", "FusedBatchNormalization", ["bc"]),
        Layer("bt", "BinaryTanh", ["bn"]),
        Layer("bw", "BinaryWeightAffine", ["bt"], {"out_shape": [3]}),
        Layer("y", "Input", params={"shape": [1]}),
        Layer("loss", "SoftmaxCrossEntropy", ["bw", "y"])])
    save_project(project, path, backup=False)  # a run trains the project file's bytes
    project = load_valid_project(path)
    run_dir, losses = train_in_process(project, str(tmp_path / "runs"))
    assert losses and all(math.isfinite(v) for v in losses)
    assert losses[-1] < losses[0], losses
    from nnconsole.engine.rundir.protocol import SNAPSHOT_FILE
    with open(os.path.join(run_dir, SNAPSHOT_FILE), encoding="utf-8") as f:  # the network the run trained
        assert "BinaryWeightAffine" in f.read()


@pytest.mark.parametrize("type_,params,shape,words", [
    ("NormNormalization", {"axes": [0, 0]}, (2, 3, 4), "repeat"),
    ("DepthwiseConvolution", {"kernel": [3, 3, 3]}, (2, 4, 4, 4), "1-D or 2-D"),
    ("DepthwiseDeconvolution", {"kernel": [3, 3, 3]}, (2, 4, 4, 4), "1-D or 2-D"),
    ("FusedBatchNormalization", {"axes": [0, 1]}, (2, 3, 4), "axes"),
    ("Transpose", {"axes": [0, 0, 1]}, (2, 3, 4), "order"),
    ("TopKData", {"k": 25}, (2, 3, 4), "larger"),
])
def test_settings_nnabla_cannot_build_are_refused_before_the_build(type_, params, shape, words):
    """A setting nnabla's function would fail on deep inside its setup is a message naming the layer
    (in the EDIT tab, `info` and `train`), not a build-time crash."""
    from nnconsole.engine.layers import resolve_params
    from nnconsole.engine.network.shapes import infer_network

    layers = [Layer("x", "Input", params={"shape": list(shape)}), Layer("L", type_, ["x"], dict(params))]
    try:
        resolve_params(type_, params)
    except ValueError as exc:  # refused as a parameter
        assert words in str(exc)
        return
    info = infer_network(Network(layers))
    assert not info.ok and any(name == "L" and words in msg for name, msg in info.errors), info.errors


def test_nntxt_settings_nnconsole_lacks_are_reported_not_dropped(tmp_path):
    """Interpolate's half-pixel sampling and Sort's second output (with_index) change the result:
    importing a file that sets them says so, naming the layer."""
    from nnconsole.engine.interop.files import import_file

    path = tmp_path / "nnc.nntxt"
    path.write_text('''
network { name: "Main" batch_size: 4
  variable { name: "x" type: "Buffer" shape { dim: -1 dim: 2 dim: 4 dim: 4 } }
  variable { name: "up" type: "Buffer" shape { dim: -1 dim: 2 dim: 8 dim: 8 } }
  variable { name: "s" type: "Buffer" shape { dim: -1 dim: 2 dim: 8 dim: 8 } }
  variable { name: "y" type: "Buffer" shape { dim: -1 dim: 2 dim: 8 dim: 8 } }
  variable { name: "loss" type: "Buffer" shape { dim: -1 dim: 2 dim: 8 dim: 8 } }
  function { name: "up" type: "Interpolate" input: "x" output: "up"
             interpolate_param { output_size: 8 output_size: 8 mode: "linear" half_pixel: true } }
  function { name: "s" type: "Sort" input: "up" output: "s" sort_param { axis: 1 with_index: true } }
  function { name: "loss" type: "SquaredError" input: "s" input: "y" output: "loss" }
}
''')
    report = import_file(str(path)).unsupported
    assert any("'up'" in u and "half_pixel" in u for u in report), report
    assert any("'s'" in u and "with_index" in u for u in report), report
