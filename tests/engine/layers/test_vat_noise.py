"""VATNoise (issue 26 item 4): NNC's Others/VATNoise with its properties and defaults, nnabla's F.vat_noise
numerics forward and backward (the gradient written into the noise buffer, none to the input), the buffer
shared between graphs built with one NoiseBuffers and refilled by its generator."""
from __future__ import annotations

import numpy as np
import pytest

from nnconsole.engine.layers import get_spec, resolve_params
from nnconsole.engine.project.model import Layer, Network
from nnconsole.engine.network.shapes import infer_network


def _network(shape, **params) -> Network:
    return Network(layers=[Layer("buf", "Input", [], {"shape": list(shape), "variable": "buf"}),
                           Layer("x", "Input", [], {"shape": list(shape), "variable": "x"}),
                           Layer("noise", "VATNoise", ["x"], params)])


def test_properties_and_defaults_are_nnc_s():
    spec = get_spec("VATNoise")
    assert spec.group == "Other" and spec.n_inputs == (1, 1)
    # NNC: BaseAxis UInt 0, Epsilon 0.0001, Buf.Dataset 'buf', Buf.Generator None (of None/Normal/Uniform/Constant)
    assert resolve_params("VATNoise", {}) == {"base_axis": 0, "eps": 0.0001, "buffer": "buf",
                                              "buffer_generator": "None", "buffer_multiplier": 1.0}
    assert spec.nnc_properties == {"BaseAxis": "base_axis", "Epsilon": "eps", "Buf.Dataset": "buffer",
                                   "Buf.Generator": "buffer_generator", "Buf.GeneratorMultiplier": "buffer_multiplier"}
    assert spec.param("buffer_generator").choices == ("None", "Normal", "Uniform", "Constant")
    info = infer_network(_network((2, 3), base_axis=1))
    assert not info.errors and info.layers["noise"].out_shape == (2, 3)
    bad = infer_network(_network((4,), base_axis=1))
    assert bad.errors and "BaseAxis 1 is out of range" in bad.errors[0][1]


@pytest.mark.parametrize("shape, base_axis, eps", [((6,), 0, 1.4), ((3, 7), 1, 10.0), ((2, 3, 4), 0, 0.0001)])
def test_forward_and_backward_match_nnabla_vat_noise(shape, base_axis, eps):
    """y equals F.vat_noise's; backward leaves x's gradient 0 and writes eps x dy into the buffer, as nnabla's."""
    import nnabla as nn
    import nnabla.functions as F

    from nnconsole.engine.runtime.graph import build_graph

    rng = np.random.RandomState(313)
    B = 4
    nn.clear_parameters()
    graph = build_graph(_network(shape, base_axis=base_axis, eps=eps), B, "runtime")
    x_value = rng.randn(B, *shape).astype(np.float32)
    dy = rng.randn(B, *shape).astype(np.float32)
    x = graph.inputs["x"]
    assert "buf" not in graph.inputs  # the buffer is no dataset column
    x.d, x.need_grad = x_value, True
    x.grad.zero()
    y = graph.outputs["noise"]
    y.forward()
    y.backward(grad=dy)
    buf = graph.noise.variable("buf", (B,) + shape)

    rx = nn.Variable.from_numpy_array(x_value, need_grad=True)
    rw = nn.Variable.from_numpy_array(np.zeros_like(x_value), need_grad=True)
    ry = F.vat_noise(rx, rw, base_axis=base_axis + 1, eps=eps)
    ry.forward()
    ry.backward(grad=dy)
    np.testing.assert_allclose(y.d, ry.d, rtol=0, atol=1e-6)
    np.testing.assert_allclose(buf.d, rw.d, rtol=0, atol=1e-6)
    np.testing.assert_allclose(buf.d, eps * dy, rtol=1e-6, atol=1e-6)
    assert not x.g.any()
    # and numpy's reference of the forward: each sample scaled to norm eps (nnabla adds 1e-8 under the root)
    flat = x_value.reshape(B * int(np.prod(shape[:base_axis])), -1)
    ref = eps * flat / np.sqrt((flat ** 2).sum(1, keepdims=True) + 1e-8)
    np.testing.assert_allclose(y.d.reshape(ref.shape), ref, rtol=1e-5, atol=1e-6)
    nn.clear_parameters()


def test_buffer_is_shared_between_graphs_and_refilled_by_its_generator():
    """The power-iteration graph's backward writes the buffer that another graph's Input reads; a generator
    refills it before each forward (Normal: standard deviation = multiplier)."""
    import nnabla as nn

    from nnconsole.engine.runtime.graph import build_graph
    from nnconsole.engine.runtime.noise import NoiseBuffers

    nn.clear_parameters()
    noise = NoiseBuffers({"buf"}, seed=1)
    power = Network(layers=[Layer("buf", "Input", [], {"shape": [50], "variable": "buf"}),
                            Layer("d", "VATNoise", ["buf"], {"eps": 2.0, "buffer_generator": "Normal",
                                                             "buffer_multiplier": 3.0})])
    reader = Network(layers=[Layer("buf", "Input", [], {"shape": [50], "variable": "buf"}),
                             Layer("r", "VATNoise", ["buf"], {"eps": 0.5, "buffer": "other"})])
    a = build_graph(power, 40, "runtime", noise=noise)
    b = build_graph(reader, 40, "runtime", noise=noise)
    assert a.noise_fills == [("buf", "Normal", 3.0)] and b.noise_fills == []
    assert a.outputs["buf"] is b.outputs["buf"] and not a.inputs and not b.inputs
    a.fill_noise()
    drawn = a.outputs["buf"].d.copy()
    assert abs(drawn.std() - 3.0) < 0.15 and abs(drawn.mean()) < 0.15
    a.outputs["d"].forward()
    np.testing.assert_allclose(np.linalg.norm(a.outputs["d"].d, axis=1), 2.0, rtol=1e-5)
    dy = np.random.RandomState(0).randn(40, 50).astype(np.float32)
    a.outputs["d"].backward(grad=dy)
    b.outputs["r"].forward()  # reads what a's backward wrote: the direction 2 dy, scaled to norm 0.5
    np.testing.assert_allclose(b.outputs["r"].d, 0.5 * dy / np.linalg.norm(dy, axis=1, keepdims=True), atol=1e-6)
    a.fill_noise()
    assert not np.allclose(a.outputs["buf"].d, drawn)  # fresh noise each time
    with pytest.raises(ValueError, match="noise buffer 'buf' is used with shape"):
        noise.variable("buf", (40, 7))
    nn.clear_parameters()


def test_one_shape_per_buffer_in_a_network_and_across_the_project():
    """A buffer is one variable: its VATNoise inputs and the Inputs reading it agree on one shape, in a network
    (shape inference names the layer) and across the networks a run trains (the project check names both)."""
    from nnconsole.engine.check.structure import check_structure
    from nnconsole.engine.project.model import ExtraOptimizer, Project

    mixed = Network(layers=[Layer("x", "Input", [], {"shape": [5], "variable": "x"}),
                            Layer("noise", "VATNoise", ["x"]),
                            Layer("buf", "Input", [], {"shape": [2, 3], "variable": "buf"})])
    info = infer_network(mixed)
    assert [n for n, _ in info.errors] == ["buf"] and "noise buffer 'buf' has shape (5,)" in info.errors[0][1]
    other = Network(layers=[Layer("x", "Input", [], {"shape": [2, 3], "variable": "x"}),
                            Layer("noise", "VATNoise", ["x"]),
                            Layer("loss", "SquaredError", ["noise", "x"])])
    main = Network(layers=[Layer("x", "Input", [], {"shape": [5], "variable": "x"}),
                           Layer("noise", "VATNoise", ["x"]),
                           Layer("loss", "SquaredError", ["noise", "x"])])
    project = Project(name="p", network=main, networks={"Other": other},
                      optimizers=[ExtraOptimizer(name="O", network="Other")])
    problems = [p for p in check_structure(project) if "noise buffer" in p.message]
    assert len(problems) == 1 and "'buf' has shape [2, 3] here but [5] in network 'Main'" in problems[0].message
    other.layer("noise").params = {"buffer": "own"}  # another buffer: no conflict
    assert not [p for p in check_structure(project) if "noise buffer" in p.message]
