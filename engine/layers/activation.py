"""Element-wise activations (shape-preserving) and Softmax."""
from __future__ import annotations

from typing import Any, List, Mapping

from .factory import function_layer
from .nntxt_codec import Unsupported
from .registry import LayerSpec, ParamSpec, Shape, norm_axis, register


def _simple(type_name: str, fn: str, doc: str, params: List[ParamSpec] = (), **more: Any) -> None:
    """An element-wise activation calling nnabla.functions.<fn> (see factory.function_layer)."""
    function_layer(type_name, "Activation", fn, doc, params, **more)


# nnabla's SELU defaults (F.selu's scale and alpha), the constants nnconsole's SELU layer uses.
SELU_SCALE, SELU_ALPHA = 1.05070098735548, 1.673263242354377


def _selu_to_nntxt(f: Any, params: Mapping[str, Any], in_shapes: list, out_shape: Shape, mode: str) -> None:
    f.selu_param.scale = SELU_SCALE
    f.selu_param.alpha = SELU_ALPHA


def _selu_from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> dict:
    if f.HasField("selu_param"):
        p = f.selu_param
        if abs(p.scale - SELU_SCALE) > 1e-5 or abs(p.alpha - SELU_ALPHA) > 1e-5:
            raise Unsupported(f"scale {p.scale} / alpha {p.alpha} (nnconsole's SELU uses the standard "
                              "constants 1.0507 / 1.6733)")
    return {}


def _selu_from_sdcproj(name: str, props: Mapping[str, Any], params: dict, unsupported: list) -> set:
    """NNC's Scale/Alpha are handled when they are the standard constants nnconsole's SELU has built in."""
    from .nnc_values import as_float, resolve

    handled = set()
    for prop, standard in (("Scale", SELU_SCALE), ("Alpha", SELU_ALPHA)):
        if abs(as_float(resolve(props, prop), standard) - standard) < 1e-5:
            handled.add(prop)
    return handled


_simple("ReLU", "relu", "Rectified linear unit: max(x, 0).")
_simple("LeakyReLU", "leaky_relu", "Leaky ReLU: x for x > 0, alpha * x otherwise.",
        [ParamSpec("alpha", "float", 0.1, "Slope for negative inputs.")], caption_always=True)
_simple("ELU", "elu", "Exponential linear unit: x for x > 0, alpha * (exp(x) - 1) otherwise.",
        [ParamSpec("alpha", "float", 1.0, "Scale of the negative part.")], caption_always=True)
_simple("SELU", "selu", "Scaled ELU with the self-normalising constants (scale 1.0507, alpha 1.6733).",
        to_nntxt=_selu_to_nntxt, from_nntxt=_selu_from_nntxt, from_sdcproj=_selu_from_sdcproj)
_simple("Swish", "swish", "Swish: x * sigmoid(x).")
_simple("GELU", "gelu", "Gaussian error linear unit: x times the standard normal CDF of x (tanh approximation).")
_simple("Tanh", "tanh", "Hyperbolic tangent.")
_simple("Sigmoid", "sigmoid", "Logistic sigmoid 1 / (1 + exp(-x)).")


def _softmax_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    norm_axis(p["axis"], len(ins[0]))
    return tuple(ins[0])


def _softmax_build(ctx, inputs, layer):
    import nnabla.functions as F
    x = inputs[0]
    axis = norm_axis(ctx.params(layer)["axis"], len(x.shape) - 1) + 1
    return F.softmax(x, axis=axis)


register(LayerSpec(
    type="Softmax", group="Activation",
    doc="Normalises values along an axis into probabilities that sum to 1.",
    params=[ParamSpec("axis", "int", -1, "Axis (without the batch axis); -1 is the last.")],
    n_inputs=(1, 1), output_shape=_softmax_shape, build=_softmax_build,
    nnc_properties={"Axis": "axis"}, nntxt_fields={"axis": "softmax_param.axis"},
))
