"""nnabla graphs built from project networks agree with the pure-Python inference."""
from __future__ import annotations

import numpy as np
import pytest

nn = pytest.importorskip("nnabla")

from nnconsole.engine.runtime.graph import GraphError, build_graph, lr_multipliers  # noqa: E402
from nnconsole.engine.layers import all_specs, get_spec  # noqa: E402
from nnconsole.engine.layers.initializers import expected_std  # noqa: E402
from nnconsole.engine.project.model import Initializer, Layer, Network  # noqa: E402
from nnconsole.engine.network.shapes import infer_network  # noqa: E402

B = 3


def L(name, type_, inputs=(), **params):
    return Layer(name=name, type=type_, inputs=list(inputs), params=params)


# (layer type, params, input shapes). Every registered type appears at least once.
CASES = [
    ("Affine", dict(out_shape=[5]), [(3, 4, 4)]),
    ("Affine", dict(out_shape=[2, 3], with_bias=False), [(6,)]),
    ("Convolution", dict(outmaps=4, kernel=[3, 3], pad=[1, 1], stride=[2, 2]), [(3, 8, 8)]),
    ("Convolution", dict(outmaps=4, kernel=[3, 3], dilation=[2, 2], group=2), [(4, 9, 9)]),
    ("Convolution", dict(outmaps=3, kernel=[3], pad=[1], with_bias=False), [(2, 10)]),
    ("Deconvolution", dict(outmaps=3, kernel=[3, 3], stride=[2, 2], pad=[1, 1]), [(4, 5, 5)]),
    ("Deconvolution", dict(outmaps=4, kernel=[2, 2], group=2), [(2, 3, 3)]),
    ("Embed", dict(n_inputs=10, n_features=4), [(6,)]),
    ("MaxPooling", dict(kernel=[3, 3], stride=[2, 2], pad=[1, 1]), [(3, 7, 7)]),
    ("MaxPooling", dict(kernel=[2, 2], ignore_border=False), [(3, 5, 7)]),
    ("MaxPooling", dict(kernel=[3, 2], stride=[2, 3], pad=[2, 1], ignore_border=False), [(2, 9, 8)]),
    ("AveragePooling", dict(kernel=[2, 2]), [(2, 6, 5)]),
    ("AveragePooling", dict(kernel=[2, 2], pad=[1, 1], including_pad=False), [(6, 5)]),
    ("AveragePooling", dict(kernel=[2, 2, 2]), [(2, 4, 4, 4)]),
    ("GlobalAveragePooling", {}, [(3, 5, 6)]),
    ("Unpooling", dict(kernel=[2, 2]), [(3, 2, 3)]),
    ("ReLU", {}, [(3, 4)]),
    ("LeakyReLU", dict(alpha=0.2), [(3, 4)]),
    ("ELU", {}, [(3, 4)]),
    ("SELU", {}, [(3, 4)]),
    ("Swish", {}, [(3, 4)]),
    ("Tanh", {}, [(3, 4)]),
    ("Sigmoid", {}, [(3, 4)]),
    ("Softmax", {}, [(3, 4)]),
    ("Softmax", dict(axis=0), [(3, 4)]),
    ("BatchNormalization", {}, [(3, 4, 4)]),
    ("BatchNormalization", dict(axes=[0, 1]), [(3, 4, 4)]),
    ("BatchNormalization", {}, [(5,)]),
    ("LayerNormalization", {}, [(3, 4)]),
    ("Dropout", dict(p=0.3), [(10,)]),
    ("Reshape", dict(shape=[-1, 4]), [(2, 4, 4)]),
    ("Flatten", {}, [(2, 3, 4)]),
    ("Concatenate", {}, [(2, 4, 4), (3, 4, 4), (1, 4, 4)]),
    ("Concatenate", dict(axis=-1), [(2, 4), (2, 1)]),
    ("Add2", {}, [(3, 4)]),
    ("Mul2", {}, [(3, 4)]),
    ("Slice", dict(start=[1, 2], stop=[3, 8], step=[1, 3]), [(3, 8, 8)]),
    ("Slice", {}, [(2, 3)]),
    ("SoftmaxCrossEntropy", {}, [(5,), (1,)]),
    ("SoftmaxCrossEntropy", dict(axis=0), [(5, 3, 3), (1, 3, 3)]),
    ("CategoricalCrossEntropy", {}, [(5,), (1,)]),
    ("BinaryCrossEntropy", {}, [(4,), (4,)]),
    ("SigmoidCrossEntropy", {}, [(4,), (4,)]),
    ("SquaredError", {}, [(2, 3), (2, 3)]),
    ("AbsoluteError", {}, [(2, 3), (2, 3)]),
    ("HuberLoss", dict(delta=0.5), [(2, 3), (2, 3)]),
]
for _i, (_t, _p, _s) in enumerate(CASES):  # Add2/Mul2 take two inputs of the listed shape
    if _t in ("Add2", "Mul2"):
        CASES[_i] = (_t, _p, _s * 2)
# Every other registered type with the examples its registration gives (a new type needs no entry here).
_LISTED = {t for t, _, _ in CASES}
CASES += [(s.type, p, list(shapes)) for s in all_specs() if s.type not in _LISTED and not s.is_input and not s.loop_control
          for p, shapes in s.example_cases()]


def case_network(type_, params, in_shapes):
    """Inputs -> layer (-> SquaredError against a target when the layer is not a loss)."""
    layers = [L(f"in{i}", "Input", shape=list(s)) for i, s in enumerate(in_shapes)]
    layers.append(L("layer", type_, [f"in{i}" for i in range(len(in_shapes))], **params))
    net = Network(layers)
    if not get_spec(type_).is_loss:
        out = infer_network(net).layers["layer"].out_shape
        assert out is not None, infer_network(net).errors
        head = "layer"
        if out == ():  # one value per sample (BatchDet): compared as (1,)
            net.layers.append(L("as1", "Reshape", ["layer"], shape=[1]))
            head, out = "as1", (1,)
        net.layers.append(L("target", "Input", shape=list(out)))
        net.layers.append(L("loss", "SquaredError", [head, "target"]))
    elif get_spec(type_).is_metric:  # a validation layer (TopNError) is not learned from: add a loss
        net.layers.append(L("target", "Input", shape=list(in_shapes[0])))
        net.layers.append(L("loss", "SquaredError", ["in0", "target"]))
    return net


def fill_inputs(built, type_, rng):
    for var, v in built.inputs.items():
        if type_ == "Embed" and var == "in0":
            v.d = rng.randint(0, 10, size=v.shape)
        elif type_ in ("SoftmaxCrossEntropy", "CategoricalCrossEntropy") and var == "in1":
            v.d = rng.randint(0, 5, size=v.shape)  # integer class labels
        elif type_ == "ACosh":
            v.d = 1 + rng.rand(*v.shape)  # acosh is defined from 1
        else:
            v.d = rng.rand(*v.shape)


def test_cases_cover_every_registered_type():
    covered = {"Input"} | {t for t, _, _ in CASES}
    # blocks: tests/engine/network/test_repeat_blocks.py
    assert covered == {s.type for s in all_specs() if not s.loop_control}


@pytest.mark.parametrize("type_,params,in_shapes", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_built_graph_matches_inference(type_, params, in_shapes):
    net = case_network(type_, params, in_shapes)
    info = infer_network(net)
    assert info.errors == []
    li = info.layers["layer"]
    for mode in ("train", "validation"):
        built = build_graph(net, B, mode)
        out = built.outputs["layer"]
        assert out.shape == (B,) + li.out_shape
        # parameters: names, shapes and learned sizes
        mine = {full: var for full, var in built.parameters.items() if built.param_owner[full][0] == "layer"}
        shapes = {built.param_owner[full][1]: tuple(var.shape) for full, var in mine.items()}
        assert shapes == li.weight_shapes
        learned = sum(int(np.prod(v.shape)) for v in mine.values() if v.need_grad)
        assert learned == li.n_params
        assert all(full.startswith("layer/") for full in mine)
        # and it runs
        fill_inputs(built, type_, np.random.RandomState(0))
        built.loss.forward()
        built.sample_error.forward()
        assert np.isfinite(built.loss.d).all()
        assert built.sample_loss.shape == (B,) and built.sample_error.shape == (B,)
        if mode == "train":
            built.loss.backward()


def test_parameter_names_follow_nnabla_parametric_functions():
    net = Network([
        L("x", "Input", shape=[1, 8, 8]), L("y", "Input", shape=[1]),
        L("conv1", "Convolution", ["x"], outmaps=4, kernel=[3, 3]),
        L("bn1", "BatchNormalization", ["conv1"]),
        L("fc", "Affine", ["bn1"], out_shape=[10]),
        L("loss", "SoftmaxCrossEntropy", ["fc", "y"]),
    ])
    built = build_graph(net, 2, "train")
    assert set(built.param_owner) == {"conv1/conv/W", "conv1/conv/b", "bn1/bn/beta", "bn1/bn/gamma",
                                      "bn1/bn/mean", "bn1/bn/var", "fc/affine/W", "fc/affine/b"}
    assert built.param_owner["bn1/bn/gamma"] == ("bn1", "gamma")
    assert set(nn.get_parameters(grad_only=False)) == set(built.param_owner)


def lenet_small() -> Network:
    return Network([
        L("x", "Input", shape=[1, 8, 8]), L("y", "Input", shape=[1]),
        L("conv1", "Convolution", ["x"], outmaps=4, kernel=[3, 3], pad=[1, 1]),
        L("bn1", "BatchNormalization", ["conv1"]),
        L("relu1", "ReLU", ["bn1"]),
        L("pool1", "MaxPooling", ["relu1"]),
        L("drop", "Dropout", ["pool1"], p=0.5),
        L("fc", "Affine", ["drop"], out_shape=[10]),
        L("loss", "SoftmaxCrossEntropy", ["fc", "y"]),
    ])


def test_train_and_validation_share_parameters_but_differ_in_bn():
    net = lenet_small()
    train = build_graph(net, 4, "train")
    val = build_graph(net, 4, "validation")
    assert set(train.parameters) == set(val.parameters)
    for k in train.parameters:
        assert train.parameters[k] is val.parameters[k]
    rng = np.random.RandomState(1)
    x = rng.rand(4, 1, 8, 8) * 3 + 2
    train.inputs["x"].d = x
    val.inputs["x"].d = x
    train.outputs["bn1"].forward()
    val.outputs["bn1"].forward()
    # train normalises with batch statistics: per-channel mean ~0
    assert np.abs(train.outputs["bn1"].d.mean(axis=(0, 2, 3))).max() < 1e-4
    # validation uses running statistics (updated once from mean 0, var 1), so differs
    assert not np.allclose(train.outputs["bn1"].d, val.outputs["bn1"].d)
    assert train.parameters["bn1/bn/mean"].need_grad is False


def test_dropout_differs_between_modes():
    net = Network([
        L("x", "Input", shape=[1000]), L("d", "Dropout", ["x"], p=0.5),
        L("t", "Input", shape=[1000]), L("loss", "SquaredError", ["d", "t"]),
    ])
    train = build_graph(net, 2, "train")
    val = build_graph(net, 2, "validation")
    x = np.ones((2, 1000))
    for g in (train, val):
        g.inputs["x"].d = x
        g.outputs["d"].forward()
    dropped = (train.outputs["d"].d == 0).mean()
    assert 0.4 < dropped < 0.6
    assert np.allclose(train.outputs["d"].d[train.outputs["d"].d != 0], 2.0)  # kept values scaled by 1/(1-p)
    assert np.array_equal(val.outputs["d"].d, x)
    rt = build_graph(net, 2, "runtime")
    rt.inputs["x"].d = x
    rt.prediction.forward()
    assert np.array_equal(rt.prediction.d, x)


def test_runtime_graph_has_no_loss_and_no_label_input():
    net = lenet_small()
    rt = build_graph(net, 5, "runtime")
    assert set(rt.inputs) == {"x"}
    assert rt.loss is None and rt.sample_loss is None and rt.sample_error is None
    assert rt.prediction_layer == "fc" and rt.prediction.shape == (5, 10)
    assert rt.task == "classification"
    assert "loss" not in rt.outputs


def test_sample_loss_and_error_values():
    net = Network([
        L("x", "Input", shape=[3]), L("y", "Input", shape=[1]), L("t", "Input", shape=[3]),
        L("sce", "SoftmaxCrossEntropy", ["x", "y"]),
        L("sq", "SquaredError", ["x", "t"]),
    ])
    g = build_graph(net, 4, "train")
    assert g.task == "classification" and g.prediction is g.inputs["x"] and g.loss_layers == ["sce", "sq"]
    rng = np.random.RandomState(0)
    x = rng.randn(4, 3)
    y = np.array([[0], [1], [2], [int(np.argmax(x[3]))]])
    t = rng.randn(4, 3)
    g.inputs["x"].d, g.inputs["y"].d, g.inputs["t"].d = x, y, t
    nn.forward_all([g.loss, g.sample_error])
    logp = x - np.log(np.exp(x).sum(axis=1, keepdims=True))
    sce = -logp[np.arange(4), y[:, 0]]
    sq = ((x - t) ** 2).mean(axis=1)
    np.testing.assert_allclose(g.sample_loss.d, sce + sq, rtol=1e-5)
    np.testing.assert_allclose(g.loss.d, (sce + sq).mean(), rtol=1e-5)
    np.testing.assert_allclose(g.sample_error.d, (x.argmax(axis=1) != y[:, 0]).astype(float))


def test_sigmoid_and_regression_errors():
    net = Network([
        L("x", "Input", shape=[4]), L("t", "Input", shape=[4]),
        L("loss", "SigmoidCrossEntropy", ["x", "t"]),
    ])
    g = build_graph(net, 2, "train")
    g.inputs["x"].d = np.array([[1, -1, 2, -2], [1, 1, 1, 1.0]])
    g.inputs["t"].d = np.array([[1, 0, 0, 0], [1, 1, 1, 1.0]])
    g.sample_error.forward()
    np.testing.assert_allclose(g.sample_error.d, [0.25, 0.0])
    nn.clear_parameters()
    net.layers[2].type = "AbsoluteError"
    g = build_graph(net, 2, "train")
    assert g.task == "regression"
    g.inputs["x"].d = np.array([[1, -1, 2, -2], [1, 1, 1, 1.0]])
    g.inputs["t"].d = 0
    nn.forward_all([g.sample_error, g.sample_loss])
    np.testing.assert_allclose(g.sample_error.d, [1.5, 1.0])
    np.testing.assert_allclose(g.sample_error.d, g.sample_loss.d)


def test_initializers():
    net = Network([
        L("x", "Input", shape=[784]), L("t", "Input", shape=[10]),
        Layer("fc1", "Affine", ["x"], {"out_shape": [100]}),
        Layer("fc2", "Affine", ["fc1"], {"out_shape": [10]},
              initializers={"W": Initializer("Constant", value=0.25), "b": Initializer("Constant", value=-1.0)}),
        Layer("conv", "Reshape", ["fc1"], {"shape": [4, 5, 5]}),
        Layer("c2", "Convolution", ["conv"], {"outmaps": 64, "kernel": [3, 3]},
              initializers={"W": Initializer("NormalConvolutionHe", multiplier=2.0)}),
        Layer("c3", "Convolution", ["conv"], {"outmaps": 64, "kernel": [3, 3]},
              initializers={"W": Initializer("UniformConvolutionGlorot", multiplier=0.5)}),
        L("loss", "SquaredError", ["fc2", "t"]),
    ])
    g = build_graph(net, 2, "train", rng=np.random.RandomState(0))
    p = g.parameters
    assert np.all(p["fc2/affine/W"].d == 0.25) and np.all(p["fc2/affine/b"].d == -1.0)
    assert np.all(p["fc1/affine/b"].d == 0.0)
    glorot = np.sqrt(2.0 / (784 + 100))  # NNC's default NormalAffineGlorot
    assert abs(p["fc1/affine/W"].d.std() / glorot - 1) < 0.2
    assert expected_std(Initializer("NormalAffineGlorot"), 784, 100) == pytest.approx(glorot)
    he = 2.0 * np.sqrt(2.0 / (4 * 9))
    assert abs(p["c2/conv/W"].d.std() / he - 1) < 0.2
    lim = 0.5 * np.sqrt(6.0 / (9 * (4 + 64)))
    w3 = p["c3/conv/W"].d
    assert np.abs(w3).max() <= lim + 1e-7 and abs(w3.std() / (lim / np.sqrt(3)) - 1) < 0.2


def test_lr_multipliers_mapping():
    net = lenet_small()
    net.layer("conv1").lr_multipliers = {"W": 0.1}
    net.layer("bn1").lr_multipliers = {"gamma": 0.0}
    g = build_graph(net, 2, "train")
    mult = lr_multipliers(net, g)
    assert mult == {"conv1/conv/W": 0.1, "conv1/conv/b": 1.0, "bn1/bn/beta": 1.0, "bn1/bn/gamma": 0.0,
                    "fc/affine/W": 1.0, "fc/affine/b": 1.0}  # running mean/var are not learned
    assert set(mult) == set(nn.get_parameters())


def test_errors_are_graph_errors():
    net = lenet_small()
    net.layer("fc").inputs = ["nope"]
    with pytest.raises(GraphError, match="layer 'fc': input 'nope' does not exist"):
        build_graph(net, 2, "train")
    no_loss = Network([L("x", "Input", shape=[3]), L("r", "ReLU", ["x"])])
    with pytest.raises(GraphError, match="no loss layer"):
        build_graph(no_loss, 2, "train")
    assert build_graph(no_loss, 2, "runtime").prediction_layer == "r"
    # a broken loss does not stop the runtime (inference) graph, which has no loss
    broken = lenet_small()
    broken.layer("y").params["shape"] = [10]
    with pytest.raises(GraphError, match="layer 'loss': SoftmaxCrossEntropy target must have shape"):
        build_graph(broken, 2, "validation")
    assert build_graph(broken, 2, "runtime").prediction_layer == "fc"
    with pytest.raises(ValueError, match="mode must be one of"):
        build_graph(no_loss, 2, "eval")


def test_rebuild_with_changed_shapes_names_the_layer():
    net = lenet_small()
    build_graph(net, 2, "train")
    net.layer("fc").params["out_shape"] = [7]
    with pytest.raises(GraphError, match="layer 'fc' .*another shape"):
        build_graph(net, 2, "validation")


def test_graph_built_inside_an_outer_scope_uses_relative_names():
    net = lenet_small()
    with nn.parameter_scope("net"):
        g = build_graph(net, 2, "train")
    assert "fc/affine/W" in g.param_owner
    assert "net/fc/affine/W" in nn.get_parameters()
