"""Layer registry and pure-Python shape/cost inference (no nnabla needed)."""
from __future__ import annotations

import random
import subprocess
import sys

import pytest

from nnconsole.engine.layers import ShapeError, all_specs, defaults, get_spec, groups, resolve_params
from nnconsole.engine.layers.registry import GROUPS, ParamSpec
from nnconsole.engine.project.model import Initializer, Layer, Network
from nnconsole.engine.network.shapes import derive_network, infer_network, runtime_layer_names
from nnconsole.engine.network.layer_order import topological_order


def L(name, type_, inputs=(), **params):
    return Layer(name=name, type=type_, inputs=list(inputs), params=params)


def lenet() -> Network:
    return Network([
        L("x", "Input", shape=[1, 28, 28]),
        L("y", "Input", shape=[1]),
        L("conv1", "Convolution", ["x"], outmaps=16, kernel=[5, 5]),
        L("pool1", "MaxPooling", ["conv1"], kernel=[2, 2]),
        L("relu1", "ReLU", ["pool1"]),
        L("conv2", "Convolution", ["relu1"], outmaps=32, kernel=[5, 5]),
        L("pool2", "MaxPooling", ["conv2"], kernel=[2, 2]),
        L("relu2", "ReLU", ["pool2"]),
        L("fc1", "Affine", ["relu2"], out_shape=[100]),
        L("relu3", "ReLU", ["fc1"]),
        L("fc2", "Affine", ["relu3"], out_shape=[10]),
        L("loss", "SoftmaxCrossEntropy", ["fc2", "y"]),
    ])


def digits_cnn() -> Network:
    return Network([
        L("x", "Input", shape=[1, 8, 8]),
        L("y", "Input", shape=[1]),
        L("conv1", "Convolution", ["x"], outmaps=16, kernel=[3, 3], pad=[1, 1]),
        L("bn1", "BatchNormalization", ["conv1"]),
        L("relu1", "ReLU", ["bn1"]),
        L("pool1", "MaxPooling", ["relu1"]),
        L("conv2", "Convolution", ["pool1"], outmaps=32, kernel=[3, 3], pad=[1]),
        L("pool2", "AveragePooling", ["conv2"], kernel=[2, 2]),
        L("drop", "Dropout", ["pool2"], p=0.25),
        L("fc", "Affine", ["drop"], out_shape=[10]),
        L("loss", "SoftmaxCrossEntropy", ["fc", "y"]),
    ])


# ------------------------------------------------------------------------------ hand-computed nets

def test_lenet_shapes_params_macs():
    info = infer_network(lenet())
    assert info.errors == []
    shapes = {n: info.layers[n].out_shape for n in info.order}
    assert shapes["conv1"] == (16, 24, 24)
    assert shapes["pool1"] == (16, 12, 12)
    assert shapes["conv2"] == (32, 8, 8)
    assert shapes["pool2"] == (32, 4, 4)
    assert shapes["fc1"] == (100,)
    assert shapes["fc2"] == (10,)
    assert shapes["loss"] == (1,)
    # parameters: W + b
    assert info.layers["conv1"].n_params == 16 * 1 * 5 * 5 + 16 == 416
    assert info.layers["conv2"].n_params == 32 * 16 * 5 * 5 + 32 == 12832
    assert info.layers["fc1"].n_params == 512 * 100 + 100 == 51300
    assert info.layers["fc2"].n_params == 100 * 10 + 10 == 1010
    assert info.total_params == 416 + 12832 + 51300 + 1010 == 65558
    assert info.layers["conv1"].weight_shapes == {"W": (16, 1, 5, 5), "b": (16,)}
    assert info.layers["fc1"].weight_shapes == {"W": (512, 100), "b": (100,)}
    # multiply-adds per sample: outputs x fan-in
    assert info.layers["conv1"].macs == 16 * 24 * 24 * 25 == 230400
    assert info.layers["conv2"].macs == 32 * 8 * 8 * 16 * 25 == 819200
    assert info.layers["fc1"].macs == 51200
    assert info.layers["relu1"].macs == 0 and info.layers["pool1"].macs == 0
    assert info.total_macs == 230400 + 819200 + 51200 + 1000
    assert info.layers["pool2"].output_size == 512
    assert info.input_variables == {"x": (1, 28, 28), "y": (1,)}
    assert info.loss_layers == ["loss"]
    assert info.order.index("conv1") < info.order.index("pool1") < info.order.index("fc2")


def test_digits_cnn_shapes_params_macs():
    info = infer_network(digits_cnn())
    assert info.errors == []
    li = info.layers
    assert li["conv1"].out_shape == (16, 8, 8)
    assert li["bn1"].out_shape == (16, 8, 8)
    assert li["pool1"].out_shape == (16, 4, 4)
    assert li["conv2"].out_shape == (32, 4, 4)  # pad [1] is repeated for both axes
    assert li["pool2"].out_shape == (32, 2, 2)
    assert li["fc"].out_shape == (10,)
    assert li["conv1"].n_params == 16 * 9 + 16 == 160
    # BN: beta and gamma are learned, running mean/var are stored but not counted
    assert li["bn1"].weight_shapes == {"beta": (1, 16, 1, 1), "gamma": (1, 16, 1, 1),
                                       "mean": (1, 16, 1, 1), "var": (1, 16, 1, 1)}
    assert li["bn1"].n_params == 32
    assert li["conv2"].n_params == 32 * 16 * 9 + 32 == 4640
    assert li["fc"].n_params == 128 * 10 + 10 == 1290
    assert info.total_params == 160 + 32 + 4640 + 1290 == 6122
    assert li["conv1"].macs == 16 * 64 * 9 == 9216
    assert li["bn1"].macs == 16 * 64  # one scale-and-shift per element
    assert li["conv2"].macs == 32 * 16 * 16 * 9 == 73728
    assert li["fc"].macs == 1280
    assert info.total_macs == 9216 + 1024 + 73728 + 1280


@pytest.mark.parametrize("type_,params,in_shapes,out", [
    ("Convolution", dict(outmaps=4, kernel=[3, 3], stride=[2, 2], pad=[1, 1]), [(3, 9, 9)], (4, 5, 5)),
    ("Convolution", dict(outmaps=2, kernel=[3, 3], dilation=[2, 2]), [(1, 9, 9)], (2, 5, 5)),
    ("Convolution", dict(outmaps=5, kernel=[3], pad=[1]), [(2, 10)], (5, 10)),
    ("Convolution", dict(outmaps=5, kernel=[3, 1], pad=[1, 0]), [(2, 10, 4)], (5, 10, 4)),
    ("Deconvolution", dict(outmaps=3, kernel=[4, 4], stride=[2, 2], pad=[1, 1]), [(4, 5, 5)], (3, 10, 10)),
    ("MaxPooling", dict(kernel=[3, 3], stride=[2, 2], pad=[1, 1]), [(3, 7, 7)], (3, 4, 4)),
    ("MaxPooling", dict(kernel=[2, 2], ignore_border=False), [(3, 5, 7)], (3, 3, 4)),
    ("AveragePooling", dict(kernel=[2, 2]), [(8, 5)], (4, 2)),
    ("GlobalAveragePooling", {}, [(7, 3, 3)], (7, 1, 1)),
    ("Unpooling", dict(kernel=[2, 3]), [(2, 3, 4)], (2, 6, 12)),
    ("Embed", dict(n_inputs=100, n_features=8), [(5,)], (5, 8)),
    ("Reshape", dict(shape=[-1, 4]), [(2, 4, 4)], (8, 4)),
    ("Flatten", {}, [(2, 3, 4)], (24,)),
    ("Concatenate", dict(axis=0), [(2, 4, 4), (3, 4, 4)], (5, 4, 4)),
    ("Concatenate", dict(axis=-1), [(2, 4), (2, 1), (2, 3)], (2, 8)),
    ("Slice", dict(start=[1, 2], stop=[3, 8], step=[1, 3]), [(3, 8, 8)], (2, 2, 8)),
    ("Softmax", {}, [(10,)], (10,)),
    ("CategoricalCrossEntropy", dict(axis=0), [(5, 3, 3), (1, 3, 3)], (1, 3, 3)),
    ("SquaredError", {}, [(3, 2), (3, 2)], (3, 2)),
    ("Convolution", dict(outmaps=1, kernel=[3, 3, 3]), [(1, 5, 5, 5)], (1, 3, 3, 3)),  # [1, 1] defaults repeat
])
def test_single_layer_shapes(type_, params, in_shapes, out):
    spec = get_spec(type_)
    p = resolve_params(type_, params)
    assert spec.output_shape(list(in_shapes), p) == out


# ------------------------------------------------------------------------------------ errors

def test_dangling_input_is_reported_once():
    net = lenet()
    net.layer("fc2").inputs = ["fc9"]
    info = infer_network(net)
    assert len(info.errors) == 1
    name, msg = info.errors[0]
    assert name == "fc2"
    assert "input 'fc9' does not exist" in msg and "known layers:" in msg and "fc1" in msg
    assert info.layers["fc2"].out_shape is None
    # downstream: no shape, no extra noise
    assert info.layers["loss"].out_shape is None and info.layers["loss"].error is None


def test_cycle_is_reported_not_raised():
    net = Network([
        L("x", "Input", shape=[4]),
        L("a", "ReLU", ["c"]),
        L("b", "Tanh", ["a"]),
        L("c", "Add2", ["b", "x"]),
        L("d", "Sigmoid", ["c"]),
    ])
    info = infer_network(net)
    assert len(info.errors) == 1
    name, msg = info.errors[0]
    assert "cycle" in msg and "a -> b -> c -> a" in msg
    for n in "abc":
        assert info.layers[n].out_shape is None and "cycle" in info.layers[n].error
    assert info.layers["d"].error is None and info.layers["d"].out_shape is None
    assert info.layers["x"].out_shape == (4,)
    order, cycles = topological_order(net)
    assert order == ["x"] and cycles == [["a", "b", "c"]]


def test_self_loop_is_a_cycle():
    info = infer_network(Network([L("x", "Input", shape=[4]), L("a", "Add2", ["x", "a"])]))
    assert [n for n, _ in info.errors] == ["a"] and "a -> a" in info.errors[0][1]


def test_unknown_type_suggests_close_name():
    net = lenet()
    net.layer("conv1").type = "Convolutoin"
    info = infer_network(net)
    assert len(info.errors) == 1
    assert "unknown layer type 'Convolutoin'" in info.errors[0][1]
    assert "did you mean 'Convolution'" in info.errors[0][1]
    with pytest.raises(KeyError) as exc:
        get_spec("relu")
    assert "did you mean 'ReLU'" in str(exc.value)


def test_bad_kernel_value():
    net = lenet()
    net.layer("conv2").params["kernel"] = [5, 0]
    info = infer_network(net)
    assert [n for n, _ in info.errors] == ["conv2"]
    assert "kernel must be a list of 1 to 3 positive integers like [3, 3], got [5, 0]" in info.errors[0][1]
    net.layer("conv2").params["kernel"] = "five"
    assert "kernel must be a list" in infer_network(net).errors[0][1]


def test_add2_shape_mismatch_message():
    net = Network([
        L("x", "Input", shape=[1, 8, 8]),
        L("a", "Convolution", ["x"], outmaps=16, kernel=[3, 3], pad=[1, 1]),
        L("b", "Convolution", ["x"], outmaps=8, kernel=[3, 3], pad=[1, 1]),
        L("pa", "MaxPooling", ["a"]),
        L("pb", "MaxPooling", ["b"]),
        L("sum", "Add2", ["pa", "pb"]),
        L("out", "ReLU", ["sum"]),
    ])
    info = infer_network(net)
    assert info.errors == [("sum", "Add2 inputs must have equal shapes, got (16, 4, 4) and (8, 4, 4)")]
    assert info.layers["out"].error is None
    with pytest.raises(ShapeError):  # the rule itself raises; infer_network turns it into an entry
        get_spec("Add2").output_shape([(16, 4, 4), (8, 4, 4)], {})


def test_other_error_messages():
    net = Network([
        L("x", "Input", shape=[784]),
        L("fc", "Affine", ["x", "x"]),
        L("conv", "Convolution", ["x"]),
        L("rs", "Reshape", ["x"], shape=[3, 100]),
        L("typo", "ReLU", ["x"], alpah=0.1),
        L("sce", "SoftmaxCrossEntropy", ["x", "x"]),
        L("cat", "Concatenate", ["x"]),
        L("img", "Reshape", ["x"], shape=[1, 28, 28]),
        L("c1d", "Convolution", ["img"], kernel=[3, 3], pad=[1, 0, 2]),
        L("a/b", "ReLU", ["x"]),
        L("pool", "MaxPooling", ["img"], kernel=[30, 2]),
    ])
    errors = dict(infer_network(net).errors)
    assert errors["fc"] == "Affine expects 1 input, got 2"
    assert "expects an input of shape (channels, H, W), got (784,)" in errors["conv"]
    assert "(784 elements) into (3, 100) (300 elements)" in errors["rs"]
    assert "unknown parameter 'alpah' for ReLU" in errors["typo"]
    assert "target must have shape (1,)" in errors["sce"] and "got (784,)" in errors["sce"]
    assert errors["cat"] == "Concatenate expects at least 2 inputs, got 1"
    assert "pad [1, 0, 2] has 3 entries but kernel [3, 3] has 2" in errors["c1d"]
    assert "must not contain '/'" in errors["a/b"]
    assert "kernel [30, 2] is larger than the padded input (1, 28, 28)" in errors["pool"]


def test_duplicate_names_and_conflicting_input_variables():
    net = Network([
        L("x", "Input", shape=[4]),
        L("x", "Input", shape=[5]),
        L("x2", "Input", shape=[3], variable="x"),
    ])
    info = infer_network(net)
    msgs = " | ".join(m for _, m in info.errors)
    assert "used by more than one layer" in msgs
    assert "variable 'x' is also read by Input 'x'" in msgs
    assert info.input_variables == {"x": (4,)}


def test_initializer_and_lr_multiplier_checks():
    net = lenet()
    net.layer("fc1").initializers = {"W": Initializer("NormalGlorot")}
    net.layer("relu1").lr_multipliers = {"W": 0.1}
    info = infer_network(net)
    assert info.errors[0][0] == "fc1" and "unknown initializer type 'NormalGlorot'" in info.errors[0][1]
    assert any(n == "relu1" and "ignored" in m for n, m in info.warnings)


def test_infer_never_raises_on_random_garbage():
    rng = random.Random(0)
    types = [s.type for s in all_specs()] + ["Nope"]
    values = [[3, 3], [0], -1, 2, "x", None, True, [1, 2, 3, 4], 0.5, [], "3,3"]
    for _ in range(300):
        layers = []
        for i in range(rng.randint(1, 8)):
            t = rng.choice(types)
            spec_params = [p.name for p in get_spec(t).params] if t != "Nope" else ["k"]
            params = {}
            for _ in range(rng.randint(0, 2)):
                params[rng.choice(spec_params + ["bogus"])] = rng.choice(values)
            names = [f"l{j}" for j in range(8)]
            inputs = rng.sample(names, rng.randint(0, 3))
            if rng.random() < 0.05:
                params = rng.choice([[1, 2], "text", 3])  # malformed file content
            if rng.random() < 0.05:
                inputs.append(None)
            layers.append(Layer(f"l{i}", t, inputs, params))
        info = infer_network(Network(layers))  # must not raise
        for name, msg in info.errors:
            assert isinstance(msg, str) and msg


def test_infer_handles_a_50_layer_chain_and_repeats_itself():
    """A deep chain infers without errors, and inferring again gives the same result (no state kept between
    calls). Its speed is measured in bench/ as a ratio, not timed here (a unit test is no stopwatch)."""
    layers = [L("x", "Input", shape=[3, 32, 32])]
    prev = "x"
    for i in range(49):
        kind = ("Convolution", "BatchNormalization", "ReLU")[i % 3]
        params = dict(outmaps=16, kernel=[3, 3], pad=[1, 1]) if kind == "Convolution" else {}
        layers.append(L(f"l{i}", kind, [prev], **params))
        prev = f"l{i}"
    net = Network(layers)
    first = infer_network(net)
    assert first.errors == []
    again = infer_network(net)
    assert again == first  # the same per-layer shapes, counts and order


def test_shapes_does_not_import_nnabla():
    code = "import sys, nnconsole.engine.network.shapes, nnconsole.engine.layers; sys.exit(1 if 'nnabla' in sys.modules else 0)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


# ----------------------------------------------------------------------------- derived nets

def test_runtime_drops_loss_and_label_input():
    net = lenet()
    rt = derive_network(net, "runtime")
    names = [layer.name for layer in rt.layers]
    assert "loss" not in names and "y" not in names
    assert names == [n for n in net.names() if n not in ("loss", "y")]
    info = infer_network(rt)
    assert info.errors == [] and info.loss_layers == [] and info.input_variables == {"x": (1, 28, 28)}
    assert rt.layers[0] is not net.layers[0]  # a copy
    # train and validation keep every layer
    assert derive_network(net, "validation").names() == net.names()
    with pytest.raises(ValueError, match="mode must be one of"):
        derive_network(net, "test")


def test_runtime_drops_target_preprocessing_but_keeps_extra_outputs():
    net = Network([
        L("x", "Input", shape=[4]),
        L("t", "Input", shape=[2, 2]),
        L("mask", "Input", shape=[3]),
        L("fc", "Affine", ["x"], out_shape=[3]),
        L("masked", "Mul2", ["fc", "mask"]),
        L("emb", "Tanh", ["fc"]),  # an extra output nobody consumes
        L("t_flat", "Reshape", ["t"], shape=[4]),
        L("t_cut", "Slice", ["t_flat"], stop=[3]),
        L("loss", "SquaredError", ["masked", "t_cut"]),
    ])
    assert infer_network(net).errors == []
    assert runtime_layer_names(net) == ["x", "mask", "fc", "masked", "emb"]


# ----------------------------------------------------------------------------- registry

def test_every_spec_defaults_pass_their_checks():
    specs = all_specs()
    assert len(specs) >= 30
    for spec in specs:
        assert spec.group in GROUPS
        assert spec.doc.endswith(".")
        resolved = resolve_params(spec.type, {})
        for p in spec.params:
            assert p.check(p.default) == resolved[p.name]
        d = defaults(spec.type)
        assert resolve_params(spec.type, d) == resolved  # defaults() round-trips (lists, not tuples)
        assert all(not isinstance(v, tuple) for v in d.values())
        if spec.is_loss:
            assert spec.n_inputs == (2, 2) and spec.task in ("classification", "regression")
            assert spec.error is not None
        for key, init in spec.weights.items():
            assert isinstance(init, Initializer)
    assert list(groups()) == [g for g in GROUPS if g in groups()]
    assert get_spec("Dropout").inference_differs and get_spec("BatchNormalization").inference_differs
    assert get_spec("Input").is_input and get_spec("HuberLoss").is_loss


def test_required_layer_types_are_registered():
    required = """Input Affine Convolution Deconvolution Embed MaxPooling AveragePooling GlobalAveragePooling
    Unpooling ReLU LeakyReLU ELU SELU Swish Tanh Sigmoid Softmax BatchNormalization LayerNormalization Dropout
    Reshape Flatten Concatenate Add2 Mul2 Slice SoftmaxCrossEntropy CategoricalCrossEntropy BinaryCrossEntropy
    SigmoidCrossEntropy SquaredError AbsoluteError HuberLoss""".split()
    for t in required:
        get_spec(t)


def test_param_spec_coercion_and_messages():
    ints = ParamSpec("kernel", "ints", (3, 3), min=1, min_len=2, max_len=2)
    assert ints.check("3,3") == (3, 3)
    assert ints.check([5, 5.0]) == (5, 5)
    with pytest.raises(ValueError, match=r"kernel must be a list of 2 positive integers like \[3, 3\]"):
        ints.check([3, 3, 3])
    with pytest.raises(ValueError, match="got \\[3, -1\\]"):
        ints.check([3, -1])
    b = ParamSpec("with_bias", "bool", True)
    assert b.check("false") is False and b.check(1) is True
    with pytest.raises(ValueError, match="true or false"):
        b.check("maybe")
    i = ParamSpec("outmaps", "int", 16, min=1)
    assert i.check("8") == 8 and i.check(4.0) == 4
    for bad in (0, 2.5, True, "x"):
        with pytest.raises(ValueError, match="outmaps must be an integer >= 1"):
            i.check(bad)
    f = get_spec("Dropout").param("p")
    assert f.check("0.3") == 0.3
    with pytest.raises(ValueError, match="p must be a number >= 0 and < 1"):
        f.check(1.0)
    e = ParamSpec("mode", "enum", "a", choices=("a", "b"))
    assert e.check("B") == "b"
    with pytest.raises(ValueError, match="one of a, b"):
        e.check("c")
    with pytest.raises(ValueError):
        ParamSpec("x", "list", 1)
