"""Issue 16's element-wise palette: NNC's Activation, Math, Trigonometric, Arithmetic (Scalar, 2 Inputs,
N Inputs) and Logical categories, every type registered (enumerated from the copied NNC reference),
computing what NNC/nnabla compute, with NNC's cost conventions, importable from .sdcproj (side pins
included) and trainable one iteration through nnabla.

The registry-wide tests cover these types too (tests/test_layer_registry.py: NNC property names and
defaults, nnabla function metadata and protobuf fields, shapes against nnabla's own loader;
tests/test_graph.py: built shapes, parameter counts, forward/backward; tests/test_interop_nntxt.py:
.nntxt round trip of every registration's examples).
"""
from __future__ import annotations

import numpy as np
import pytest

from nnconsole.engine.layers import find_spec, get_spec
from nnconsole.engine.project.model import Layer, Network
from tests import nnc_reference
from tests.layer_cases import single_layer_network

# NNC category -> (nnconsole palette group, number of types NNC's palette lists in it)
CATEGORIES = {
    "Activation": ("Activation", 23),
    "Math": ("Math", 18),
    "Trigonometric": ("Trigonometric", 12),
    "Arithmetic (Scalar)": ("Arithmetic", 8),
    "Arithmetic (2 Inputs)": ("Arithmetic", 7),
    "Arithmetic (N Inputs)": ("Arithmetic", 2),
    "Logical": ("Logical", 21),
}
# Palette entries of these categories nnconsole leaves out, with the reason (none today).
LEFT_OUT: dict = {}
# Types whose output is a constant for backward: 0/1 comparisons and index outputs (nnabla has no gradient
# for them: its backward raises "not_implemented"); layers before them learn through other paths only.
NO_GRADIENT = set(nnc_reference.palette()["Logical"])


def _palette_types():
    return [(c, t) for c in CATEGORIES for t in nnc_reference.palette()[c]]


def test_every_type_of_the_elementwise_categories_is_registered():
    palette = nnc_reference.palette()
    missing = []
    for category, (group, count) in CATEGORIES.items():
        assert len(palette[category]) == count, category
        for name in palette[category]:
            assert nnc_reference.layer(name) is not None, f"the reference has no definition file for {name}"
            spec = find_spec(name)
            if name in LEFT_OUT:
                assert spec is None, f"{name} is registered: drop it from LEFT_OUT"
            elif spec is None:
                missing.append(f"{category}/{name}")
            else:
                assert spec.group == group and spec.nnc_name == name, (name, spec.group)
    assert missing == []


# -- values: each type computes what NNC's definition says (numpy reference on one big network) -----------
def _elu(x, alpha):
    return np.where(x > 0, x, alpha * (np.exp(x) - 1))


def _log_softmax(x, axis):
    m = x - x.max(axis=axis, keepdims=True)
    return m - np.log(np.exp(m).sum(axis=axis, keepdims=True))


def _cum(op, x, axis, exclusive, reverse):
    if reverse:
        x = np.flip(x, axis)
    y = op(x, axis=axis)
    if exclusive:
        y = y - x if op is np.cumsum else y / x
    return np.flip(y, axis) if reverse else y


S = (3, 4)
ANY, POS, UNIT, FROM1, BITS = (-1.0, 1.0), (0.2, 0.9), (-0.9, 0.9), (1.1, 2.0), "bits"
# type -> (params, input shapes, input range, numpy reference on the batched inputs); axes in params exclude
# the batch axis, the references count it.
CASES = {
    "Abs": ({}, [S], ANY, np.abs),
    "ReLU6": ({}, [S], (-2.0, 8.0), lambda x: np.clip(x, 0, 6)),
    "HardSigmoid": ({}, [S], (-4.0, 4.0), lambda x: np.clip(0.2 * x + 0.5, 0, 1)),
    "HardTanh": ({}, [S], (-2.0, 2.0), lambda x: np.clip(x, -1, 1)),
    "LogSigmoid": ({}, [S], ANY, lambda x: -np.log1p(np.exp(-x))),
    "Mish": ({}, [S], ANY, lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    "Sinc": ({}, [S], (0.1, 3.0), lambda x: np.sin(x) / x),
    "SoftSign": ({}, [S], ANY, lambda x: x / (1 + np.abs(x))),
    "TanhShrink": ({}, [S], ANY, lambda x: x - np.tanh(x)),
    "SoftPlus": ({}, [S], ANY, lambda x: np.log1p(np.exp(x))),
    "CELU": ({"alpha": 0.5, "axis": 1}, [S], ANY, lambda x: np.concatenate([_elu(x, .5), _elu(-x, .5)], 2)),
    "CReLU": ({}, [S], ANY, lambda x: np.concatenate([np.maximum(x, 0), np.maximum(-x, 0)], 1)),
    "LogSoftmax": ({}, [S], ANY, lambda x: _log_softmax(x, 1)),
    "PReLU": ({}, [S], ANY, lambda x: np.where(x > 0, x, 0.25 * x)),  # NNC's slope: Constant 0.25
    "Exp": ({}, [S], ANY, np.exp), "Log": ({}, [S], POS, np.log),
    "Ceil": ({}, [S], (-3.0, 3.0), np.ceil), "Floor": ({}, [S], (-3.0, 3.0), np.floor),
    "Round": ({}, [S], (-3.0, 3.0), np.round),
    "Sign": ({}, [S], ANY, np.sign),
    "CumSum": ({"axis": 1, "exclusive": True, "reverse": True}, [S], ANY,
               lambda x: _cum(np.cumsum, x, 2, True, True)),
    "CumProd": ({"axis": 0}, [S], POS, lambda x: np.cumprod(x, axis=1)),
    "Sum": ({"axes": [0, 2], "keep_dims": True}, [(2, 3, 4)], ANY, lambda x: x.sum(axis=(1, 3), keepdims=True)),
    "Mean": ({}, [S], ANY, lambda x: x.mean(axis=1)),
    "Prod": ({"axes": [1]}, [S], POS, lambda x: x.prod(axis=2)),
    "Max": ({"axes": [1], "only_index": True}, [S], ANY, lambda x: x.argmax(axis=2)),
    "Min": ({"axes": [-1], "keep_dims": True}, [(2, 3, 4)], ANY, lambda x: x.min(axis=3, keepdims=True)),
    "Norm": ({"p": 1.0, "axes": [1]}, [S], ANY, lambda x: np.abs(x).sum(axis=2)),
    "BatchInv": ({}, [(3, 3)], POS, np.linalg.inv),
    "BatchDet": ({}, [(3, 3)], POS, np.linalg.det),
    "BatchLogdet": ({}, [(1, 1)], POS, lambda x: np.log(np.linalg.det(x))),
    "BatchMatmul": ({}, [(3, 4), (4, 2)], ANY, np.matmul),
    "ATan2": ({}, [S, S], ANY, np.arctan2),
    "Sub2": ({}, [S, S], ANY, np.subtract), "Div2": ({}, [S, S], POS, np.divide),
    "Pow2": ({}, [S, S], POS, np.power), "Maximum2": ({}, [S, S], ANY, np.maximum),
    "Minimum2": ({}, [S, S], ANY, np.minimum),
    "AddN": ({}, [S, S, S], ANY, lambda a, b, c: a + b + c), "MulN": ({}, [S, S, S], ANY, lambda a, b, c: a * b * c),
    "AddScalar": ({}, [S], ANY, lambda x: x),  # NNC's default Value 0
    "MulScalar": ({"val": 2.5}, [S], ANY, lambda x: 2.5 * x),
    "RSubScalar": ({"val": 2.5}, [S], ANY, lambda x: 2.5 - x),
    "RDivScalar": ({"val": 2.5}, [S], POS, lambda x: 2.5 / x),
    "PowScalar": ({}, [S], ANY, lambda x: x ** 2),  # NNC's default Value 2
    "RPowScalar": ({"val": 2.5}, [S], ANY, lambda x: 2.5 ** x),
    "MaximumScalar": ({}, [S], ANY, lambda x: np.maximum(x, 0)),  # NNC's default Value 0
    "MinimumScalar": ({"val": 0.75}, [S], ANY, lambda x: np.minimum(x, 0.75)),
    "Equal": ({}, [S, S], BITS, lambda a, b: a == b), "NotEqual": ({}, [S, S], BITS, lambda a, b: a != b),
    "Greater": ({}, [S, S], ANY, np.greater), "GreaterEqual": ({}, [S, S], BITS, np.greater_equal),
    "Less": ({}, [S, S], ANY, np.less), "LessEqual": ({}, [S, S], BITS, np.less_equal),
    "LogicalAnd": ({}, [S, S], BITS, np.logical_and), "LogicalOr": ({}, [S, S], BITS, np.logical_or),
    "LogicalXor": ({}, [S, S], BITS, np.logical_xor), "LogicalNot": ({}, [S], BITS, np.logical_not),
    "EqualScalar": ({"val": 1.0}, [S], BITS, lambda x: x == 1), "NotEqualScalar": ({}, [S], BITS, lambda x: x != 0),
    "GreaterScalar": ({}, [S], ANY, lambda x: x > 0), "GreaterEqualScalar": ({"val": 1.0}, [S], BITS, lambda x: x >= 1),
    "LessScalar": ({"val": 0.5}, [S], ANY, lambda x: x < 0.5), "LessEqualScalar": ({}, [S], BITS, lambda x: x <= 0),
    "LogicalAndScalar": ({"val": 1.0}, [S], BITS, lambda x: x != 0),
    "LogicalOrScalar": ({}, [S], BITS, lambda x: x != 0),  # NNC's default Value 0 (false)
    "LogicalXorScalar": ({"val": 2.0}, [S], BITS, lambda x: x == 0),  # any non-zero Value is true
    "IsNaN": ({}, [S], "special", np.isnan), "IsInf": ({}, [S], "special", np.isinf),
}
for _name, _fn in (("Sin", np.sin), ("Cos", np.cos), ("Tan", np.tan), ("Sinh", np.sinh), ("Cosh", np.cosh),
                   ("ATan", np.arctan), ("ASinh", np.arcsinh), ("ASin", np.arcsin), ("ACos", np.arccos),
                   ("ATanh", np.arctanh)):
    CASES[_name] = ({}, [S], UNIT, _fn)
CASES["ACosh"] = ({}, [S], FROM1, np.arccosh)
B = 2


def _inputs(kind, shape, rng):
    if kind == BITS:
        return rng.randint(0, 2, size=shape).astype(np.float32)
    if kind == "special":
        x = rng.uniform(-1, 1, size=shape)
        x.flat[::3], x.flat[1::5] = np.nan, np.inf
        return x
    return rng.uniform(*kind, size=shape)


def test_new_types_all_have_a_value_case():
    elementwise = {t for _c, t in _palette_types()}
    old = {"ReLU", "LeakyReLU", "ELU", "SELU", "Swish", "GELU", "Tanh", "Sigmoid", "Softmax", "Add2", "Mul2"}
    assert set(CASES) == elementwise - old


def test_each_type_computes_nncs_function():
    """All cases in one network (one build, one forward): each output equals the numpy reference."""
    from nnconsole.engine.graph import build_graph

    layers = []
    for t, (params, shapes, _kind, _ref) in CASES.items():
        layers += single_layer_network(t, params, shapes, prefix=f"{t}_")
    built = build_graph(Network(layers), B, "validation")
    rng = np.random.RandomState(0)
    wrong = []
    for t, (params, shapes, kind, ref) in CASES.items():
        xs = [_inputs(kind, (B,) + tuple(s), rng) for s in shapes]
        for i, x in enumerate(xs):
            built.inputs[f"{t}_in{i}"].d = x
        out = built.outputs[f"{t}_layer"]
        out.forward()
        expected = np.asarray(ref(*xs), dtype=np.float64)
        if out.shape != expected.shape or not np.allclose(out.d, expected, rtol=1e-4, atol=1e-5, equal_nan=True):
            wrong.append(f"{t}: got {out.d.ravel()[:4]} shape {out.shape}, expected {expected.ravel()[:4]} "
                         f"shape {expected.shape}")
    assert wrong == []


# -- costs: NNC's CostParameter / CostMultiplyAdd conventions ----------------------------------------------
@pytest.mark.parametrize("type_,params,shapes,n_params,macs", [
    ("PReLU", {}, [(16, 5, 5)], 16, 16 * 25),  # a slope per channel; CostMultiplyAdd = the input size
    ("PReLU", {"shared": True}, [(16, 5, 5)], 1, 16 * 25),
    ("PReLU", {"base_axis": 1}, [(16, 5, 5)], 5, 16 * 25),
    ("BatchMatmul", {}, [(2, 3, 4), (2, 4, 5)], 0, 2 * 3 * 5 * 4),  # MatmulMultiplyAddSize
    ("BatchInv", {}, [(6, 6)], 0, 6 ** 3), ("BatchDet", {}, [(6, 6)], 0, 6 ** 3),
    ("Exp", {}, [(3, 4)], 0, 0), ("Greater", {}, [(3, 4), (3, 4)], 0, 0), ("Sum", {}, [(3, 4)], 0, 0),
])
def test_parameter_and_multiply_add_counts_follow_nnc(type_, params, shapes, n_params, macs):
    from nnconsole.engine.shapes import infer_network

    info = infer_network(Network(single_layer_network(type_, params, shapes)))
    assert info.errors == []
    assert (info.layers["layer"].n_params, info.layers["layer"].macs) == (n_params, macs)


@pytest.mark.parametrize("type_,params,shapes,message", [
    ("BatchInv", {}, [(3, 4)], "square matrix"),
    ("BatchMatmul", {}, [(3, 4), (3, 2)], "(..., M, K) by (..., K, N)"),
    ("Sub2", {}, [(3, 4), (4, 3)], "equal shapes"),
    ("AddN", {}, [(3, 4), (3, 4), (2,)], "equal shapes"),
    ("Max", {"with_index": True}, [(3, 4)], "OnlyIndex"),
    ("Sum", {"axes": [2]}, [(3, 4)], "out of range"),
    ("Mean", {"axes": [0, -2]}, [(3, 4)], "more than once"),  # nnabla's setup fails on a repeated axis
    ("Max", {"axes": [1, 1]}, [(3, 4)], "more than once"),
    ("CReLU", {"axis": 3}, [(3, 4)], "out of range"),
    ("PReLU", {"base_axis": 2}, [(3, 4)], "BaseAxis"),
])
def test_shape_errors_say_what_to_fix(type_, params, shapes, message):
    from nnconsole.engine.shapes import infer_network

    layers = [Layer(f"in{i}", "Input", params={"shape": list(s)}) for i, s in enumerate(shapes)]
    layers.append(Layer("L", type_, [f"in{i}" for i in range(len(shapes))], params))
    errors = infer_network(Network(layers)).errors
    assert any(name == "L" and message in text for name, text in errors), errors


# -- .sdcproj: NNC's Value property and side pins (R, x) --------------------------------------------------
def test_sdcproj_values_and_side_pins_import(tmp_path):
    """Div2's R and ATan2's x arrive on NNC's side pin (DestPinIndex 1) and become the second input; the
    R pin's Generator properties are not reported; reading R from a dataset is."""
    from nnconsole.engine.interop import import_file
    from tests.test_interop_sdcproj import sdcproj_text

    text = sdcproj_text([
        ("r", "Input", {"Size": "4", "Dataset": "r"}, []),  # linked first, to the side pin
        ("x", "Input", {"Size": "4", "Dataset": "x"}, []),
        ("d", "Div2", {"R.Generator": "Constant", "R.GeneratorMultiplier": "1.0"}, ["r", "x"]),
        ("a", "ATan2", {"x.Generator": "Constant"}, ["r", "d"]),
        ("s", "AddScalar", {"Value": "0.5"}, ["a"]),
        ("g", "LogicalOrScalar", {"Value": "1"}, ["s"]),
        ("p", "PReLU", {"BaseAxis": "0", "Shared": "True", "slope.Initializer": "Constant",
                            "slope.InitializerMultiplier": "0.1"}, ["s"]),
        ("m", "Max", {"Axes": "0", "KeepDims": "True", "OnlyIndex": "False"}, ["p"]),
        ("loss", "SquaredError", {"T.Dataset": "y"}, ["m"]),
    ])
    # the links r -> d and r -> a go to the side pin
    text = text.replace("SourceLayerID=0\r\nSourcePinIndex=0\r\nDestLayerID=2\r\nDestPinIndex=0",
                        "SourceLayerID=0\r\nSourcePinIndex=0\r\nDestLayerID=2\r\nDestPinIndex=1")
    text = text.replace("SourceLayerID=0\r\nSourcePinIndex=0\r\nDestLayerID=3\r\nDestPinIndex=0",
                        "SourceLayerID=0\r\nSourcePinIndex=0\r\nDestLayerID=3\r\nDestPinIndex=1")
    assert text.count("DestPinIndex=1") == 2
    path = tmp_path / "elementwise.sdcproj"
    path.write_text(text, newline="")
    result = import_file(str(path))
    net = result.project.network
    assert result.unsupported == []
    assert net.layer("d").inputs == ["x", "r"] and net.layer("a").inputs == ["d", "r"]
    assert net.layer("s").params == {"val": 0.5} and net.layer("g").params == {"val": 1.0}
    assert net.layer("p").params == {"base_axis": 0, "shared": True}
    assert net.layer("p").initializers["slope"].type == "Constant" and net.layer("p").initializers["slope"].value == 0.1
    assert net.layer("m").params == {"axes": [0], "keep_dims": True, "only_index": False}

    path.write_text(sdcproj_text([("x", "Input", {"Size": "4", "Dataset": "x"}, []),
                                  ("d", "Sub2", {"R.Dataset": "r"}, ["x"]),
                                  ("loss", "SquaredError", {"T.Dataset": "y"}, ["d"])]), newline="")
    assert any("R.Dataset=r" in u and "link an Input layer" in u for u in import_file(str(path)).unsupported)


# -- training: one iteration of a network holding every type ---------------------------------------------
def _trainable_chain(t, params, shapes, domain):
    """in -> Affine -> Sigmoid (-> AddScalar 1 for ACosh) per input -> the layer -> SquaredError: the
    Affine weights before the layer learn through it (values kept in the layer's domain)."""
    p = f"{t}_"
    layers = []
    feeds = []
    for i, s in enumerate(shapes):
        layers += [Layer(f"{p}in{i}", "Input", params={"shape": list(s), "variable": f"{p}in{i}"}),
                   Layer(f"{p}fc{i}", "Affine", [f"{p}in{i}"], {"out_shape": list(s)}),
                   Layer(f"{p}sg{i}", "Sigmoid", [f"{p}fc{i}"])]
        feeds.append(f"{p}sg{i}")
        if domain == FROM1:
            layers.append(Layer(f"{p}up{i}", "AddScalar", [f"{p}sg{i}"], {"val": 1.0}))
            feeds[-1] = f"{p}up{i}"
    chain = single_layer_network(t, params, shapes, prefix=p)
    layer = next(x for x in chain if x.name == f"{p}layer")
    layer.inputs = feeds
    return layers + [x for x in chain if x.type != "Input" or x.name == f"{p}target"]


def test_one_training_iteration_of_every_type():
    """One network with a chain per type trains one SGD step through nnabla: the loss is finite, and the
    weights before each layer move unless the layer passes no gradient (Logical, index outputs)."""
    import nnabla as nn
    import nnabla.solvers as S

    from nnconsole.engine.graph import build_graph

    layers = []
    for t, (params, shapes, domain, _ref) in CASES.items():
        layers += _trainable_chain(t, params, shapes, domain)
    nn.clear_parameters()
    try:
        built = build_graph(Network(layers), B, "train")
        rng = np.random.RandomState(1)
        for v in built.inputs.values():
            v.d = rng.uniform(-1, 1, size=v.shape)
        solver = S.Sgd(lr=0.1)
        solver.set_parameters(built.parameters)
        before = {k: v.d.copy() for k, v in built.parameters.items()}
        built.loss.forward()
        solver.zero_grad()
        built.loss.backward()
        solver.update()
        assert np.isfinite(built.loss.d).all()
        stuck = set()
        for name, var in built.parameters.items():
            owner = built.param_owner[name][0]
            if owner.endswith("_fc0") and np.array_equal(var.d, before[name]):
                stuck.add(owner[:-len("_fc0")])
            assert np.isfinite(var.d).all(), name
    finally:
        nn.clear_parameters()
    no_gradient = NO_GRADIENT | {"Max"}  # Max's case outputs the index
    assert stuck == no_gradient & set(CASES)


def test_logical_outputs_are_constants_for_backward():
    """nnabla's comparison functions raise on backward; nnconsole's Logical layers turn their output's
    need_grad off, so backward stops there and a network containing one trains."""
    import nnabla as nn
    import nnabla.functions as F

    x = nn.Variable.from_numpy_array(np.array([[0.3, -1.2]]), need_grad=True)
    with pytest.raises(RuntimeError):
        y = F.greater_scalar(x, 0.0)
        y.forward()
        y.backward()
    from nnconsole.engine.graph import build_graph

    for t in NO_GRADIENT:
        assert get_spec(t).group == "Logical"
    net = Network(_trainable_chain("GreaterScalar", {}, [S], ANY))
    built = build_graph(net, B, "train")
    built.loss.forward()
    built.loss.backward()  # would raise "not_implemented" if backward reached the comparison
    assert not built.outputs["GreaterScalar_layer"].need_grad


def test_the_trainer_trains_and_evaluates_a_project_with_new_types(tmp_path):
    """The real CLI: `train` runs epochs of an MLP with PReLU, a Logical mask, Mul2 and scalar arithmetic
    (forward through the comparison at validation, backward around it), and `info` counts PReLU's slopes."""
    from nnconsole.engine.project.io import load_project, save_project
    from tests.helpers import nnconsole, run_dir_from, tabular_project

    path = tabular_project(str(tmp_path), n=32, batch=8, epochs=2)
    project = load_project(path)
    net = project.network
    fc2 = net.layer("fc2")
    net.layers.remove(net.layer("act1"))
    position = net.layers.index(fc2)
    net.layers[position:position] = [
        Layer("p", "PReLU", ["fc1"]),
        Layer("g", "GreaterScalar", ["p"], {"val": 0.0}),
        Layer("m", "Mul2", ["p", "g"]),
        Layer("s", "AddScalar", ["m"], {"val": 0.5}),
    ]
    fc2.inputs = ["s"]
    save_project(project, path, backup=False)
    out = nnconsole(["train", path, "-q"])
    assert "finished: validation loss" in out.stdout
    run_dir = run_dir_from(out.stdout)
    info = nnconsole(["info", path]).stdout
    rows = {line.split()[0]: line.split() for line in info.splitlines() if line.strip()}
    assert rows["p"][1:] == ["PReLU", "8", "8", "8"]  # 8 slopes; NNC's CostMultiplyAdd: the input size
    assert rows["g"][1:] == ["GreaterScalar", "8", "0", "0"]

    import nnabla as nn
    from nnabla.utils.nnp_graph import NnpLoader

    nn.clear_parameters()
    try:  # the exported runtime network (with the comparison) runs in nnabla
        nnp = NnpLoader(f"{run_dir}/model_final.nnp")
        graph = nnp.get_network(nnp.get_network_names()[0], batch_size=2)
        x = list(graph.inputs.values())[0]
        x.d = np.random.RandomState(0).randn(*x.shape)
        y = list(graph.outputs.values())[0]
        y.forward()
        assert y.shape == (2, 3) and np.isfinite(y.d).all()
    finally:
        nn.clear_parameters()


def test_nntxt_keeps_what_nnc_hides_and_reports_other_values(tmp_path):
    """SoftPlus's beta (no NNC property) is written as 1 (a missing message would make nnabla use 0); a
    file with another beta is reported, not silently changed. Logical scalars' bool val reads as 0/1."""
    from nnconsole.engine.interop import export_nntxt, import_file
    from nnconsole.engine.project.model import Datasets, Project

    layers = single_layer_network("SoftPlus", {}, [S], prefix="a_") + \
        single_layer_network("LogicalOrScalar", {"val": 3.0}, [S], prefix="b_")
    project = Project(name="hidden", network=Network(layers), datasets=Datasets(training="a.csv", validation="a.csv"))
    path = tmp_path / "hidden.nntxt"
    export_nntxt(project, str(path))
    text = path.read_text()
    assert "beta: 1" in text and "val: true" in text
    back = import_file(str(path))
    assert back.project.network.layer("b_layer").params == {"val": 1.0}  # nnabla's bool: true
    assert [u for u in back.unsupported if "a_layer" in u or "b_layer" in u] == []
    path.write_text(text.replace("beta: 1", "beta: 2"))
    assert any("a_layer" in u and "beta 2" in u for u in import_file(str(path)).unsupported)


def test_scalar_arithmetic_nodes_show_their_formula():
    from nnconsole.engine.layers.captions import caption

    assert caption("AddScalar", {"val": 2.5}) == "x + 2.5" and caption("RDivScalar", {"val": 1.0}) == "1 / x"
    assert caption("PowScalar", {}) == "x ^ 2"  # NNC's default Value
    assert caption("MulScalar", {"val": "oops"}) == "x × oops"  # a bad stored value is shown, not a crash


def test_every_example_of_the_new_types_round_trips(tmp_path):
    """Each new type's registration examples (non-default axes, Values, flags) exported to .nntxt and
    imported again give the same layers, parameters and initializers (PReLU's slope); the .nnp a run
    exports is checked by the CLI test above."""
    from nnconsole.engine.interop import export_nntxt, import_file
    from nnconsole.engine.project.model import Datasets, Project
    from tests.test_interop_nntxt import same_network

    layers = []
    for t in sorted(CASES):
        for k, (params, shapes) in enumerate(get_spec(t).example_cases()):
            layers += single_layer_network(t, params, shapes, prefix=f"{t.lower()}{k}_")
    project = Project(name="rt", network=Network(layers), datasets=Datasets(training="a.csv", validation="a.csv"))
    path = tmp_path / "rt.nntxt"
    export_nntxt(project, str(path))
    back = import_file(str(path))
    assert [u for u in back.unsupported if "_layer" in u] == []
    same_network(project.network, back.project.network)


def _nnc_project_with_every_new_type() -> str:
    """A .sdcproj as NNC writes it: every new type with NNC's default properties, fed by Inputs (the second
    operand of Div2, Greater, ATan2, BatchMatmul ... on its side pin), each chain ending in a loss."""
    from tests.test_interop_sdcproj import sdcproj_text

    layers, side = [], []
    for t in sorted(CASES):
        nnc = nnc_reference.layer(t)
        _params, shapes = get_spec(t).example_cases()[0]
        props = {k: p.value for k, p in nnc.properties.items() if k not in ("Input", "Output", "Inputs")
                 and not k.startswith("Cost")}
        names = [f"{t}_in{i}" for i in range(len(shapes))]
        layers += [(n, "Input", {"Size": ",".join(map(str, s)), "Dataset": n}, []) for n, s in zip(names, shapes)]
        layers.append((t, t, props, names))
        if len(get_spec(t).input_names) == 2:
            side.append((len(layers) - 1, len(names) - 1))
        head = t
        if t in ("BatchDet", "BatchLogdet"):  # one value per sample, shape (): a loss needs it as (1,)
            layers.append((f"{t}_r", "Reshape", {"OutShape": "1"}, [t]))
            head = f"{t}_r"
        layers.append((f"{t}_loss", "SquaredError", {"T.Dataset": f"{t}_y"}, [head]))
    text = sdcproj_text(layers)
    ids = {name: i for i, (name, *_rest) in enumerate(layers)}
    for dst, _pin in side:  # the link from the second Input to the layer goes to the side pin
        src = ids[layers[dst][3][1]]
        old = f"SourceLayerID={src}\r\nSourcePinIndex=0\r\nDestLayerID={dst}\r\nDestPinIndex=0"
        assert text.count(old) == 1
        text = text.replace(old, old[:-1] + "1")
    return text


def test_nnc_project_with_every_new_type_imports_and_info_accepts_it(tmp_path):
    """The CLI, as a user runs it: `import` of the .sdcproj reports nothing about the layers, `info` accepts
    the project (shapes, parameters and costs of every layer)."""
    from tests.helpers import nnconsole

    source = tmp_path / "every.sdcproj"
    source.write_text(_nnc_project_with_every_new_type(), newline="")
    from nnconsole.engine.interop import import_file

    assert import_file(str(source)).unsupported == []
    imported = nnconsole(["import", str(source), "-o", str(tmp_path / "every.yaml")])
    assert all(t not in imported.stdout + imported.stderr for t in ("side pin", "no nnconsole equivalent")), \
        imported.stdout + imported.stderr
    info = nnconsole(["info", str(tmp_path / "every.yaml")])
    types = {line.split()[1] for line in info.stdout.splitlines() if len(line.split()) > 2}
    assert set(CASES) <= types
