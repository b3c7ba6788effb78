"""docs/cli.md says where `info` counts differently from NNC's CostParameter/CostMultiplyAdd; each claim
there is checked against shape inference here, so the note cannot drift from the counts."""
from __future__ import annotations

import os

import pytest

from nnconsole.engine.layers import defaults
from nnconsole.engine.project.model import Layer, Network
from nnconsole.engine.network.shapes import infer_network
from tests.support.paths import ROOT


def _one(type_name, shape, **params):
    net = Network(layers=[Layer("x", "Input", [], {"shape": shape}),
                          Layer("l", type_name, ["x"], {**defaults(type_name), **params})])
    info = infer_network(net)
    assert not info.errors, info.errors
    return info.layers["l"]


def test_cli_reference_has_the_counting_note_under_info():
    text = open(os.path.join(ROOT, "docs", "cli.md")).read()
    info_part = text.split("## nnconsole info", 1)[1].split("\n## ", 1)[0]
    assert "### How `nnconsole info` counts, compared with NNC" in info_part
    for claim in ("CostAdd", "1/32", "InstanceNormalization, GroupNormalization, FusedBatchNormalization",
                  "FFT, IFFT", "MinMaxQuantize", "counted once"):
        assert claim in info_part


@pytest.mark.parametrize("type_name,params", [("BinaryConnectAffine", {"out_shape": 4}),
                                               ("BinaryWeightAffine", {"out_shape": 4})])
def test_binary_layers_count_w_and_b_at_full_size_and_no_multiply_adds(type_name, params):
    li = _one(type_name, [8], **params)
    assert li.n_params == 8 * 4 + 4 and li.macs == 0  # W and b; Wb (and alpha) not counted


@pytest.mark.parametrize("type_name,shape", [("InstanceNormalization", [2, 4, 4]),
                                              ("GroupNormalization", [4, 4, 4]),
                                              ("FusedBatchNormalization", [2, 4, 4])])
def test_normalizations_count_one_multiply_add_per_element(type_name, shape):
    assert _one(type_name, shape).macs == shape[0] * shape[1] * shape[2]


def test_fft_elementwise_and_min_max_quantize_counts():
    assert _one("FFT", [4, 4, 2]).macs == 0 and _one("IFFT", [4, 4, 2]).macs == 0
    assert _one("Exp", [4]).macs == 0 and _one("MulScalar", [4]).macs == 0
    assert _one("MinMaxQuantize", [4], ema=True).n_params == 2  # r and R, even in EMA mode


def test_shared_scopes_count_once():
    layers = [Layer("x", "Input", [], {"shape": [8]}),
              Layer("a", "Affine", ["x"], {"out_shape": 8}, parameter_scope="s"),
              Layer("b", "Affine", ["a"], {"out_shape": 8}, parameter_scope="s")]
    info = infer_network(Network(layers=layers))
    assert info.total_params == 8 * 8 + 8
    assert sorted(info.layers[n].n_params for n in "ab") == [0, 72]
