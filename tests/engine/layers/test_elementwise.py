"""Issue 16's element-wise palette: NNC's Activation, Math, Trigonometric, Arithmetic (Scalar, 2 Inputs,
N Inputs) and Logical categories, every type registered (enumerated from the copied NNC reference),
computing what NNC/nnabla compute, with NNC's cost conventions and clear shape errors, and trainable one
iteration through nnabla. Files and the CLI: tests/engine/layers/test_elementwise_interop.py.

The registry-wide tests cover these types too (tests/engine/layers/test_registry.py: NNC property names and
defaults, nnabla function metadata and protobuf fields, shapes against nnabla's own loader;
tests/engine/runtime/test_graph.py: built shapes, parameter counts, forward/backward;
tests/engine/interop/test_nntxt.py: .nntxt round trip of every registration's examples).
The cases (parameters, shapes, numpy references): tests/support/elementwise_cases.py.
"""
from __future__ import annotations

import numpy as np
import pytest

from nnconsole.engine.layers import find_spec, get_spec
from nnconsole.engine.project.model import Layer, Network
from tests.support import nnc_reference
from tests.support.networks import single_layer_network
from tests.support.elementwise_cases import ANY, BITS, CASES, FROM1, S

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
    from nnconsole.engine.runtime.graph import build_graph

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
    from nnconsole.engine.network.shapes import infer_network

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
    from nnconsole.engine.network.shapes import infer_network

    layers = [Layer(f"in{i}", "Input", params={"shape": list(s)}) for i, s in enumerate(shapes)]
    layers.append(Layer("L", type_, [f"in{i}" for i in range(len(shapes))], params))
    errors = infer_network(Network(layers)).errors
    assert any(name == "L" and message in text for name, text in errors), errors


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

    from nnconsole.engine.runtime.graph import build_graph

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
    from nnconsole.engine.runtime.graph import build_graph

    for t in NO_GRADIENT:
        assert get_spec(t).group == "Logical"
    net = Network(_trainable_chain("GreaterScalar", {}, [S], ANY))
    built = build_graph(net, B, "train")
    built.loss.forward()
    built.loss.backward()  # would raise "not_implemented" if backward reached the comparison
    assert not built.outputs["GreaterScalar_layer"].need_grad


def test_scalar_arithmetic_nodes_show_their_formula():
    from nnconsole.engine.layers.registry import caption

    assert caption("AddScalar", {"val": 2.5}) == "x + 2.5" and caption("RDivScalar", {"val": 1.0}) == "1 / x"
    assert caption("PowScalar", {}) == "x ^ 2"  # NNC's default Value
    assert caption("MulScalar", {"val": "oops"}) == "x × oops"  # a bad stored value is shown, not a crash
