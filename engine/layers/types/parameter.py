"""Parameter layers: Parameter (a learned tensor) and WorkingMemory (a kept, unlearned tensor).

Neither has a data input: the layer's output is its weight ``<scope>/param/W`` of shape ``(1, *shape)``
broadcast to every sample of the batch, so it can feed any layer of matching shape (a learned bias
or embedding table, a fixed mask). NNC's side links that feed a Parameter into another layer's weight
pin are not imported (the importer reports them). Exported to nnabla as a Broadcast of the parameter.
"""
from __future__ import annotations

from typing import Any, Dict, Mapping

from nnconsole.engine.project.model import Initializer

from nnconsole.engine.layers.nntxt_codec import Unsupported, set_shape
from nnconsole.engine.layers.registry import LayerSpec, ParamSpec, Shape, prod, register
from nnconsole.engine.layers.nnc_values import as_float, resolve


def _build(ctx, inputs, layer):
    import nnabla as nn  # deferred: nnabla stays out of the GUI
    import nnabla.functions as F  # deferred: nnabla stays out of the GUI
    from nnabla.parameter import get_parameter_or_create  # deferred: nnabla stays out of the GUI

    shape = tuple(ctx.params(layer)["shape"])
    n = prod(shape)
    with nn.parameter_scope("param"):
        w = get_parameter_or_create("W", (1,) + shape, ctx.initializer(layer, "W", n, n),
                                    need_grad=layer.type == "Parameter")  # WorkingMemory is kept, not learned
    return F.broadcast(w, (ctx.batch_size,) + shape)


def _to_nntxt(f: Any, p: Mapping[str, Any], in_shapes: list, out_shape: Shape, mode: str) -> None:
    set_shape(f.broadcast_param.shape, [-1] + list(out_shape))


def _from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> Dict[str, Any]:
    dims = list(weights.get("W", []))
    if not dims or dims[0] != 1:
        raise Unsupported(f"a parameter of shape {dims} (nnconsole's Parameter layers keep a leading axis of 1)")
    return {"shape": dims[1:]}


def _from_sdcproj(learned: bool):
    """NNC spells the weight's settings without the 'W.' prefix (Initializer, InitializerMultiplier, ...; the
    importer reads them as W's); a WorkingMemory is never learned, so a learning rate for it is reported."""
    def hook(name: str, props: Dict[str, str], params: Dict[str, Any], unsupported: list) -> set:
        lr = resolve(props, "LRateMultiplier")
        if not learned and lr is not None and as_float(lr, 0.0) != 0.0:
            unsupported.append(f"layer '{name}' (WorkingMemory): LRateMultiplier={lr} is not supported; a "
                               "WorkingMemory is kept, not learned (use a Parameter layer to learn it)")
        handled = {"Initializer", "InitializerMultiplier", "LRateMultiplier", "File"}
        if (props.get("Size") or "").strip() == "*GraphOutput":  # NNC's default: the shape of the pin it feeds;
            handled.add("Size")  # left at the default, a mismatch is a shape error on the layer it feeds
        return handled
    return hook


_SHAPE = ParamSpec("shape", "ints", (1,), "Shape of the tensor without the batch axis (NNC's Size).", min=1)

for _type, _doc, _init, _learned in (
        ("Parameter", "A learned tensor of the given shape (the same for every sample), e.g. a learned bias "
                      "or input; NNC's Parameter.", Initializer("Normal", 0.01, 0.0), True),
        ("WorkingMemory", "A tensor of the given shape that is initialised and kept but not learned (NNC's "
                          "WorkingMemory with LRateMultiplier 0).", Initializer("Normal", 1.0, 0.0), False)):
    register(LayerSpec(
        type=_type, group="Parameter", doc=_doc,
        params=[_SHAPE if _learned else ParamSpec("shape", "ints", (1, 28, 28), _SHAPE.doc, min=1)],
        n_inputs=(0, 0),
        output_shape=lambda ins, p: tuple(p["shape"]),
        weight_shapes=lambda ins, p: {"W": (1,) + tuple(p["shape"])},
        build=_build, weights={"W": _init}, non_trainable=() if _learned else ("W",),
        nnc_properties={"Size": "shape"}, weight_scope="param", weight_order=("W",),
        examples=(({"shape": [3]}, ()), ({"shape": [2, 3, 3]}, ())),
        export_as="Broadcast", to_nntxt=_to_nntxt, from_nntxt=_from_nntxt, from_sdcproj=_from_sdcproj(_learned),
    ))
