"""Issue 16: NNC's 11 initializers (the W.Initializer options of Affine and Convolution in NNC's own
definitions), each with nnabla's formula, through the engine's graph for Affine and Convolution shapes,
and through .nntxt export and nnabla's own loader.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

from nnconsole.engine.interop import mapping
from nnconsole.engine.layers.initializers import expected_std, make_initializer
from nnconsole.engine.project.model import INITIALIZERS, Initializer, Layer, Network
from tests.support.nnc_reference import LAYER_COMPONENT, sections
from tests.support.paths import INTEROP_DATA

AFFINE = (300, 200, (1,))  # in, out, kernel as the Affine layer passes them
CONV = (16, 32, (3, 3))


def nnc_options(layer_file: str) -> list:
    """The W.Initializer choices NNC offers for a layer (its Property_W.Initializer_Option section)."""
    text = open(os.path.join(LAYER_COMPONENT, "Basic", layer_file), encoding="utf-8").read()
    return sections(text)["Property_W.Initializer_Option"]


def nnc_initializers() -> list:
    """NNC's 11 initializers: Affine's and Convolution's options (channel-last CLConv variants aside)."""
    names = nnc_options("Affine.txt") + nnc_options("Convolution.txt")
    return sorted({n for n in names if "CLConv" not in n})


def nnabla_std(name: str, inmaps: int, outmaps: int, kernel) -> float:
    """The standard deviation nnabla's own formula gives (the limit / sqrt(3) for the uniform ones)."""
    import nnabla.initializer as I

    if "Glorot" in name and name.startswith("Uniform"):
        return I.calc_uniform_lim_glorot(inmaps, outmaps, kernel)[1] / np.sqrt(3)
    if "Glorot" in name:
        return I.calc_normal_std_glorot(inmaps, outmaps, kernel)
    if name.endswith("HeBackward"):
        return I.calc_normal_std_he_backward(inmaps, outmaps, kernel)
    if name.endswith(("He", "HeForward")):
        return I.calc_normal_std_he_forward(inmaps, outmaps, kernel)
    return {"Normal": 1.0, "Uniform": 1 / np.sqrt(3), "Constant": 0.0}[name]


def test_every_nnc_initializer_has_an_nnconsole_type():
    names = nnc_initializers()
    assert len(names) == 11
    types = {n: mapping.initializer_type(n) for n in names}
    assert None not in types.values(), types
    assert sorted(set(types.values())) == sorted(INITIALIZERS)  # and nothing beyond NNC's


@pytest.mark.parametrize("nnc_name", nnc_initializers())
@pytest.mark.parametrize("fans", [AFFINE, CONV], ids=["affine", "convolution"])
def test_expected_std_is_nnablas_formula_and_samples_have_it(nnc_name, fans):
    kind = mapping.initializer_type(nnc_name)
    init = Initializer(kind, multiplier=1.5, value=0.25)
    inmaps, outmaps, kernel = fans
    want = 1.5 * nnabla_std(nnc_name, inmaps, outmaps, kernel)
    if kind == "Constant":
        assert expected_std(init, *fans) == 0.0
        sample = make_initializer(init, inmaps, outmaps, kernel)((50, 40))
        assert np.all(sample == 0.25)
        return
    assert expected_std(init, inmaps, outmaps, kernel) == pytest.approx(want, rel=1e-9)
    rng = np.random.RandomState(0)
    sample = make_initializer(init, inmaps, outmaps, kernel, rng=rng)((400, 250))
    assert sample.std() == pytest.approx(want, rel=0.02)
    assert abs(sample.mean()) < 0.02 * want
    if kind.startswith("Uniform"):
        assert np.abs(sample).max() <= want * np.sqrt(3) * (1 + 1e-6)


def test_he_forward_and_backward_differ_by_the_fan_they_use():
    forward, backward = Initializer("NormalConvolutionHe"), Initializer("NormalConvolutionHeBackward")
    assert expected_std(forward, 16, 64, (3, 3)) == pytest.approx(np.sqrt(2 / (9 * 16)))
    assert expected_std(backward, 16, 64, (3, 3)) == pytest.approx(np.sqrt(2 / (9 * 64)))


@pytest.mark.parametrize("kind", ["NormalAffineHeBackward", "NormalConvolutionHeBackward", "NormalAffineHe",
                                  "UniformConvolutionGlorot", "NormalAffineGlorot"])
def test_the_layers_pass_their_fans_so_the_weights_have_nnablas_std(kind):
    import nnabla as nn

    from nnconsole.engine.runtime.graph import build_graph

    net = Network([
        Layer("x", "Input", params={"shape": [3, 12, 12]}),
        Layer("conv", "Convolution", ["x"], {"outmaps": 40, "kernel": [5, 5]}, initializers={"W": Initializer(kind)}),
        Layer("fc", "Affine", ["conv"], {"out_shape": [300]}, initializers={"W": Initializer(kind)}),
        Layer("t", "Input", params={"shape": [300]}),
        Layer("loss", "SquaredError", ["fc", "t"]),
    ])
    nn.clear_parameters()
    g = build_graph(net, 2, "train", rng=np.random.RandomState(1))
    conv_w, fc_w = g.parameters["conv/conv/W"].d, g.parameters["fc/affine/W"].d
    assert conv_w.shape == (40, 3, 5, 5) and fc_w.shape == (40 * 8 * 8, 300)
    assert conv_w.std() == pytest.approx(nnabla_std(kind, 3, 40, (5, 5)), rel=0.05)
    assert fc_w.std() == pytest.approx(nnabla_std(kind, 40 * 8 * 8, 300, (1,)), rel=0.05)
    nn.clear_parameters()


def test_he_backward_survives_nntxt_export_and_nnablas_loader_draws_with_it(tmp_path):
    from nnabla.utils import load

    from nnconsole.engine.interop.nntxt.exporter import export_nntxt
    from nnconsole.engine.interop.nntxt.importer import import_nntxt
    from nnconsole.engine.project.model import Project

    net = Network([
        Layer("x", "Input", params={"shape": [400]}),
        Layer("fc", "Affine", ["x"], {"out_shape": [50]},
              initializers={"W": Initializer("NormalAffineHeBackward", multiplier=2.0)}),
        Layer("t", "Input", params={"shape": [50]}),
        Layer("loss", "SquaredError", ["fc", "t"]),
    ])
    out = tmp_path / "he.nntxt"
    export_nntxt(Project(network=net), str(out), with_extras=False)
    back = import_nntxt(str(out)).project.network.layer("fc")
    assert back.initializers["W"] == Initializer("NormalAffineHeBackward", 2.0)
    import nnabla as nn

    nn.clear_parameters()
    info = load.load([str(out)], prepare_data_iterator=False, exclude_parameter=False)
    assert "fc/affine/W" in info.networks["Main"].parameters
    w = nn.get_parameters(grad_only=False)["fc/affine/W"].d  # drawn by nnabla's loader from the file's initializer
    assert w.std() == pytest.approx(2.0 * np.sqrt(2 / 50), rel=0.05)  # sqrt(2 / out): the backward fan
    nn.clear_parameters()


def test_sdcproj_he_backward_imports_as_itself(tmp_path):
    import shutil

    from nnconsole.engine.interop.files import import_file

    data = INTEROP_DATA
    folder = tmp_path / "nnc"
    shutil.copytree(data, folder)
    path = folder / "nnc_tiny_cnn.sdcproj"
    text = path.read_text()
    assert text.count("Value=NormalConvolutionHeForward") == 1 and text.count("Value=UniformAffineGlorot") == 1
    path.write_text(text.replace("Value=NormalConvolutionHeForward", "Value=NormalConvolutionHeBackward")
                    .replace("Value=UniformAffineGlorot", "Value=NormalAffineHeBackward"))
    result = import_file(str(path))
    assert result.unsupported == []
    layers = {layer.name: layer for layer in result.project.network.layers}
    assert layers["Convolution"].initializers["W"] == Initializer("NormalConvolutionHeBackward", 0.5)
    assert layers["Affine"].initializers["W"] == Initializer("NormalAffineHeBackward", 1.0)
