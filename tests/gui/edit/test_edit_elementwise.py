"""Issue 16's element-wise palette in the EDIT tab: every type of NNC's Activation, Math, Trigonometric,
Arithmetic and Logical categories is in the palette under its group, and a user builds a network of new
types from it (NNC's property names as fields, the second operand on the side pin, the counts shown)."""
from __future__ import annotations

import pytest
from PySide6.QtWidgets import QCheckBox

from tests.gui.support import drag_connect, palette_double_click, type_into
from nnconsole.engine.network.shapes import infer_network
from tests.support import nnc_reference

pytestmark = pytest.mark.gui

CATEGORIES = {"Activation": "Activation", "Math": "Math", "Trigonometric": "Trigonometric",
              "Arithmetic (Scalar)": "Arithmetic", "Arithmetic (2 Inputs)": "Arithmetic",
              "Arithmetic (N Inputs)": "Arithmetic", "Logical": "Logical"}


def test_every_elementwise_type_is_in_the_palette_under_its_group(page):
    for category, group in CATEGORIES.items():
        for type_name in nnc_reference.palette()[category]:
            item = page.palette.item(type_name)
            assert item.parent() is not None and item.parent().text(0).startswith(group), type_name
    page.palette.filter("Greater")
    assert set(page.palette.visible_types()) >= {"Greater", "GreaterEqual", "GreaterScalar", "GreaterEqualScalar"}


def test_build_a_network_of_new_types_from_the_palette(page):
    x = palette_double_click(page, "Input")
    type_into(page, "param_shape", "3, 4")
    prelu = palette_double_click(page, "PReLU")
    shared = page.properties.findChild(QCheckBox, "param_shared")
    assert shared is not None and not shared.isChecked()
    scalar = palette_double_click(page, "AddScalar")
    type_into(page, "param_val", "2.5")
    total = palette_double_click(page, "Sum")
    type_into(page, "param_axes", "1")
    page.scene.select_names([])
    palette_double_click(page, "Input")  # the divisor, renamed r
    type_into(page, "prop_name", "r")
    type_into(page, "param_shape", "3")
    page.scene.select_names([total])
    div = palette_double_click(page, "Div2")
    drag_connect(page, "r", div, pin=1)
    page.flush()
    network = page.document.project.network
    assert [network.layer(n).inputs for n in (prelu, scalar, total)] == [[x], [prelu], [scalar]]
    assert network.layer(div).inputs == [total, "r"]
    assert network.layer(scalar).params["val"] == 2.5 and network.layer(total).params["axes"] == [1]
    info = infer_network(network)
    assert info.layers[div].out_shape == (3,) and info.layers[prelu].n_params == 3  # a slope per channel
    assert {row.name: row.n_params for row in page.statistics.chart.rows}[prelu] == 3
