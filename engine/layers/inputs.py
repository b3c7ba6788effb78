"""The Input layer: a dataset variable (one CSV column) entering the network."""
from __future__ import annotations

from .registry import LayerSpec, ParamSpec, register


def input_variable(layer, params) -> str:
    """The dataset variable an Input layer reads: its ``variable`` parameter, else its name."""
    return params.get("variable") or layer.name


register(LayerSpec(
    type="Input", group="IO",
    doc="A dataset variable (a CSV column such as x or y) entering the network with the given shape.",
    params=[
        ParamSpec("shape", "ints", (1, 28, 28), "Shape of one sample without the batch axis, e.g. [1, 28, 28].",
                  min=1),
        ParamSpec("variable", "str", "", "Dataset variable name (CSV header); empty means the layer name."),
    ],
    n_inputs=(0, 0),
    output_shape=lambda ins, p: tuple(p["shape"]),
    is_input=True,
    nnc_properties={"Size": "shape", "Dataset": "variable"},
    caption=lambda p: f"variable {p.get('variable')}" if p.get("variable") else "",
))
