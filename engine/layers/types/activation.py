"""NNC's Activation category: element-wise activations, CReLU/CELU (which double an axis), PReLU (a
learned slope), Softmax and LogSoftmax."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping

from nnconsole.engine.project.model import Initializer

from nnconsole.engine.layers.factory import function_layer
from nnconsole.engine.layers.function_hooks import axis_build, axis_checked_shape, doubled_axis_shape, fixed_nntxt
from nnconsole.engine.layers.nntxt_codec import Unsupported, axis_from_nnabla, axis_to_nnabla
from nnconsole.engine.layers.registry import LayerSpec, ParamSpec, Shape, norm_axis, prod, register
from nnconsole.engine.layers.nnc_values import as_float, resolve


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
    import nnabla.functions as F  # deferred: nnabla stays out of the GUI
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


# -- issue 16: the rest of NNC's Activation category --------------------------------------------
_simple("Abs", "abs", "Absolute value |x|.")
_simple("ReLU6", "relu6", "ReLU capped at 6: min(max(x, 0), 6).")
_simple("HardSigmoid", "hard_sigmoid", "Piecewise-linear sigmoid: max(0, min(1, 0.2 * x + 0.5)).")
_simple("HardTanh", "hard_tanh", "Piecewise-linear tanh: x clipped to [-1, 1].")
_simple("LogSigmoid", "log_sigmoid", "log(sigmoid(x)), computed stably.")
_simple("Mish", "mish", "Mish: x * tanh(softplus(x)).")
_simple("Sinc", "sinc", "sin(x) / x (1 at x = 0).")
_simple("SoftSign", "softsign", "x / (1 + |x|).")
_simple("TanhShrink", "tanh_shrink", "x - tanh(x).")
# NNC's SoftPlus has no Beta property: nnabla's default 1 (log(1 + exp(x))) is written to .nntxt files.
_SOFTPLUS_HOOKS = fixed_nntxt({}, {"softplus_param.beta": 1.0})
_simple("SoftPlus", "softplus", "log(1 + exp(x)).", to_nntxt=_SOFTPLUS_HOOKS[0], from_nntxt=_SOFTPLUS_HOOKS[1])

_AXIS0 = ParamSpec("axis", "int", 0, "Axis (without the batch axis); 0 is the channel axis, -1 the last.")
# Axis defaults are NNC's (0, without the batch axis); nnabla counts the batch axis (its default 1 is the
# same axis), so the nnabla-metadata check, which compares defaults literally, is left out for these.
_simple("CELU", "celu", "Concatenated ELU: ELU(x) and ELU(-x) concatenated along an axis (doubles it).",
        [ParamSpec("alpha", "float", 1.0, "Scale of the negative part."), _AXIS0],
        output_shape=doubled_axis_shape, build=axis_build("celu"), nnabla_function="",
        examples=(({}, ((3, 4),)), ({"alpha": 0.5, "axis": 1}, ((3, 4),))))
_simple("CReLU", "crelu", "Concatenated ReLU: ReLU(x) and ReLU(-x) concatenated along an axis (doubles it).",
        [_AXIS0], output_shape=doubled_axis_shape, build=axis_build("crelu"), nnabla_function="",
        examples=(({}, ((3, 4),)), ({"axis": -1}, ((2, 3, 4),))))
_simple("LogSoftmax", "log_softmax", "log(softmax(x)) along an axis, computed stably.",
        [_AXIS0], output_shape=axis_checked_shape, build=axis_build("log_softmax"), nnabla_function="",
        examples=(({}, ((3, 4),)), ({"axis": 1}, ((3, 4),))))


# -- PReLU: a learned slope per channel (or one shared) -----------------------------------------
def _prelu_weights(ins: List[Shape], p: Mapping[str, Any]) -> Dict[str, Shape]:
    if p["shared"]:
        return {"slope": ()}
    return {"slope": (ins[0][norm_axis(p["base_axis"], len(ins[0]), "BaseAxis")],)}


def _prelu_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    _prelu_weights(ins, p)  # checks BaseAxis
    return tuple(ins[0])


def _prelu_build(ctx, inputs, layer):
    import nnabla.parametric_functions as PF  # deferred: nnabla stays out of the GUI

    p = ctx.params(layer)
    x = inputs[0]
    axis = norm_axis(p["base_axis"], len(x.shape) - 1, "BaseAxis") + 1
    return PF.prelu(x, base_axis=axis, shared=p["shared"],
                    slope_init=ctx.initializer(layer, "slope", x.shape[axis], x.shape[axis]))


def _prelu_to_nntxt(f: Any, p: Mapping[str, Any], in_shapes: list, out_shape: Shape, mode: str) -> None:
    f.prelu_param.base_axis = axis_to_nnabla(p["base_axis"])


def _prelu_from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> dict:
    if "slope" not in weights:
        raise Unsupported("its slope is not a parameter")
    base = f.prelu_param.base_axis if f.HasField("prelu_param") else 1
    slope = list(weights["slope"])
    return {"base_axis": axis_from_nnabla(base), "shared": not slope}  # a shared slope has shape ()


register(LayerSpec(
    type="PReLU", group="Activation",
    doc="Parametric ReLU: x for x > 0, slope * x otherwise, with a learned slope per channel (or one shared).",
    params=[ParamSpec("base_axis", "int", 0, "The channel axis (without the batch axis) the slopes run along."),
            ParamSpec("shared", "bool", False, "One slope for all channels.")],
    n_inputs=(1, 1), output_shape=_prelu_shape, weight_shapes=_prelu_weights,
    macs=lambda ins, out, p: prod(ins[0]),  # NNC: CostMultiplyAdd = the input size
    build=_prelu_build, weights={"slope": Initializer("Constant", 1.0, 0.25)},
    nnc_properties={"BaseAxis": "base_axis", "Shared": "shared"},
    weight_scope="prelu", weight_order=("slope",),
    to_nntxt=_prelu_to_nntxt, from_nntxt=_prelu_from_nntxt,
    examples=(({}, ((3, 4),)), ({"shared": True}, ((2, 3, 3),))),
))
