"""Small networks around one layer type, for the tests that enumerate the layer registry."""
from __future__ import annotations

from typing import Any, Dict, List, Sequence

from nnconsole.engine.layers import get_spec
from nnconsole.engine.project.model import Layer, Network


def single_layer_network(type_: str, params: Dict[str, Any], in_shapes: Sequence[Sequence[int]],
                         prefix: str = "", name: str = "layer") -> List[Layer]:
    """Inputs -> the layer (-> SquaredError against a target Input when the layer is not a loss; a validation
    layer gets a SquaredError on its first input).

    Names are prefixed with ``prefix`` so several such chains can share one network."""
    from nnconsole.engine.network.shapes import infer_network

    layers = [Layer(f"{prefix}in{i}", "Input", params={"shape": list(s), "variable": f"{prefix}in{i}"})
              for i, s in enumerate(in_shapes)]
    layers.append(Layer(f"{prefix}{name}", type_, [f"{prefix}in{i}" for i in range(len(in_shapes))], dict(params)))
    if not get_spec(type_).is_loss:
        info = infer_network(Network(list(layers)))
        out = info.layers[f"{prefix}{name}"].out_shape
        assert out is not None, info.errors
        head = f"{prefix}{name}"
        if out == ():  # one value per sample (BatchDet): a data variable needs a shape, so compare it as (1,)
            layers.append(Layer(f"{prefix}as1", "Reshape", [head], {"shape": [1]}))
            head, out = f"{prefix}as1", (1,)
        layers.append(Layer(f"{prefix}target", "Input", params={"shape": list(out), "variable": f"{prefix}target"}))
        layers.append(Layer(f"{prefix}loss", "SquaredError", [head, f"{prefix}target"]))
    elif get_spec(type_).is_metric:  # a validation layer (TopNError) is not learned from: add a loss
        layers.append(Layer(f"{prefix}target", "Input", params={"shape": list(in_shapes[0]),
                                                                "variable": f"{prefix}target"}))
        layers.append(Layer(f"{prefix}loss", "SquaredError", [f"{prefix}in0", f"{prefix}target"]))
    return layers
