"""Issue 16's structural palette in the EDIT tab: every registered type of NNC's Basic, Pooling,
Normalization, Quantize, Spectral and Others categories is in the palette under its group, and a user
builds a MobileNet/binary-style network of new types from it (fields, an enum choice, the counts)."""
from __future__ import annotations

import pytest
from PySide6.QtWidgets import QComboBox

from tests.gui.support import palette_double_click, type_into
from nnconsole.engine.interop import mapping
from nnconsole.engine.network.shapes import infer_network
from tests.support import nnc_reference

pytestmark = pytest.mark.gui

CATEGORIES = {"Basic": "Basic", "Pooling": "Pooling", "Normalization": "Normalization", "Quantize": "Quantize",
              "Spectral": "Spectral", "Others": "Other"}


def test_every_registered_structural_type_is_in_the_palette_under_its_group(page):
    for category, group in CATEGORIES.items():
        for type_name in nnc_reference.palette()[category]:
            if mapping.registry_type(type_name) is None:
                continue  # left out, with its reason, in tests/test_layers_structural.py
            item = page.palette.item(type_name)
            assert item.parent() is not None and item.parent().text(0).startswith(group), type_name


def test_build_a_network_of_new_structural_types_from_the_palette(page):
    x = palette_double_click(page, "Input")
    type_into(page, "param_shape", "4, 8, 8")
    dw = palette_double_click(page, "DepthwiseConvolution")
    type_into(page, "param_kernel", "3, 3")
    type_into(page, "param_pad", "1, 1")
    type_into(page, "param_multiplier", "2")
    gn = palette_double_click(page, "GroupNormalization")
    type_into(page, "param_num_groups", "4")
    pad = palette_double_click(page, "Pad")
    type_into(page, "param_pad_width", "1, 1")
    mode = page.properties.findChild(QComboBox, "param_mode")
    assert mode is not None
    mode.setCurrentText("reflect")
    mode.activated.emit(mode.currentIndex())  # what a user's pick sends
    sumpool = palette_double_click(page, "SumPooling")
    fc = palette_double_click(page, "BinaryConnectAffine")
    type_into(page, "param_out_shape", "10")
    page.flush()
    network = page.document.project.network
    assert [network.layer(n).inputs for n in (dw, gn, pad, sumpool, fc)] == [[x], [dw], [gn], [pad], [sumpool]]
    assert network.layer(pad).params["mode"] == "reflect" and network.layer(dw).params["multiplier"] == 2
    info = infer_network(network)
    assert info.layers[dw].out_shape == (8, 8, 8) and info.layers[pad].out_shape == (8, 8, 10)
    assert info.layers[sumpool].out_shape == (8, 4, 5) and info.layers[fc].out_shape == (10,)
    rows = {row.name: row.n_params for row in page.statistics.chart.rows}
    assert rows[dw] == 8 * 9 + 8 and rows[gn] == 16 and rows[fc] == 160 * 10 + 10  # Wb is not learned
