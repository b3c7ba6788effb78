"""NNC's Quantize category: FixedPointQuantize, MinMaxQuantize, Pow2Quantize, BinaryTanh, BinarySigmoid and the binary
layers BinaryConnectAffine/Convolution (weights binarised to +-1) and BinaryWeightAffine/Convolution
(+-1 times a per-output scale alpha).

Parameters as nnabla's parametric functions create them: ``<name>/bicon_affine/{W,Wb,b}``,
``<name>/bicon_conv/...``, ``<name>/bwn_affine/{W,Wb,alpha,b}``, ``<name>/bwn_conv/...``. Wb (the
binarised copy) and alpha are recomputed from W on every forward pass: stored, never learned (``non_trainable``),
so the learned count is W and b (NNC counts the binary W at 1/32 of a float) while the stored count (``n_stored``,
what nnabla's loader counts in the file) also holds Wb and alpha. As in NNC, the binary
layers have no multiply-adds (NNC's CostMultiplyAdd): their products are sign flips (NNC's CostAdd).
"""
from __future__ import annotations

from typing import Any, Dict, Mapping

from nnconsole.engine.project.model import Initializer

from nnconsole.engine.layers.types import basic
from nnconsole.engine.layers.factory import function_layer
from nnconsole.engine.layers.nntxt_codec import Unsupported, dims, per_dim_or, set_shape
from nnconsole.engine.layers.registry import LayerSpec, ParamSpec, Shape, per_dim, prod, register

_ZERO = Initializer("Constant", 1.0, 0.0)
_STE = ParamSpec("ste_fine_grained", "bool", True, "Straight-through gradient only inside the range.")

function_layer("FixedPointQuantize", "Quantize", "fixed_point_quantize",
               "Rounds to a fixed-point grid of step delta with n bits.",
               [ParamSpec("sign", "bool", True, "Signed (one bit for the sign)."),
                ParamSpec("n", "int", 8, "Bit width.", min=1),
                ParamSpec("delta", "float", 0.0625, "Step of the grid.", min=0.0), _STE],
               nnc_properties={"Sign": "sign", "N": "n", "Delta": "delta", "STEFineGrained": "ste_fine_grained"})
function_layer("Pow2Quantize", "Quantize", "pow2_quantize", "Rounds to signed powers of two with n bits.",
               [ParamSpec("sign", "bool", True, "Signed (one bit for the sign)."),
                ParamSpec("with_zero", "bool", True, "Zero is a value (one code for it)."),
                ParamSpec("n", "int", 8, "Bit width.", min=1),
                ParamSpec("m", "int", 1, "Largest exponent: values up to 2^m.", min=0), _STE],
               nnc_properties={"Sign": "sign", "WithZero": "with_zero", "N": "n", "M": "m",
                               "STEFineGrained": "ste_fine_grained"})
function_layer("BinaryTanh", "Quantize", "binary_tanh", "-1 for x <= 0, +1 otherwise (straight-through gradient).")
function_layer("BinarySigmoid", "Quantize", "binary_sigmoid", "0 for x <= 0, 1 otherwise (straight-through "
               "gradient).")


# ------------------------------------------------------------------------------------ binary layers
def _affine_weights(scaled: bool):
    def rule(ins: list, p: Mapping[str, Any]) -> Dict[str, Shape]:
        out = tuple(p["out_shape"])
        w = {"W": (prod(ins[0]),) + out, "Wb": (prod(ins[0]),) + out}
        if scaled:
            w["alpha"] = (prod(out),)
        if p["with_bias"]:
            w["b"] = out
        return w
    return rule


def _conv_weights(scaled: bool):
    def rule(ins: list, p: Mapping[str, Any]) -> Dict[str, Shape]:
        w = basic._conv_weights(ins, p)
        w["Wb"] = w["W"]
        if scaled:
            w["alpha"] = (p["outmaps"],)
        return {k: w[k] for k in ("W", "Wb", "alpha", "b") if k in w}
    return rule


def _affine_build(fn: str):
    def build(ctx: Any, inputs: list, layer: Any) -> Any:
        import nnabla.parametric_functions as PF  # deferred: nnabla stays out of the GUI
        p, x = ctx.params(layer), inputs[0]
        fans = (prod(x.shape[1:]), prod(p["out_shape"]))
        return getattr(PF, fn)(x, list(p["out_shape"]), base_axis=1, w_init=ctx.initializer(layer, "W", *fans),
                               wb_init=ctx.initializer(layer, "Wb", *fans),
                               b_init=ctx.initializer(layer, "b", *fans) if p["with_bias"] else None,
                               with_bias=p["with_bias"])
    return build


def _conv_build(fn: str):
    def build(ctx: Any, inputs: list, layer: Any) -> Any:
        import nnabla.parametric_functions as PF  # deferred: nnabla stays out of the GUI
        p, x = ctx.params(layer), inputs[0]
        kernel, pad, stride, dilation, _, group, outmaps = basic._conv_geometry(layer.type, [tuple(x.shape[1:])], p)
        fans = (x.shape[1], outmaps, kernel)
        return getattr(PF, fn)(x, outmaps, kernel, pad=pad, stride=stride, dilation=dilation, group=group,
                               w_init=ctx.initializer(layer, "W", *fans), wb_init=ctx.initializer(layer, "Wb", *fans),
                               b_init=ctx.initializer(layer, "b", *fans) if p["with_bias"] else None,
                               with_bias=p["with_bias"])
    return build


def _message(f: Any) -> Any:
    return getattr(f, {"BinaryConnectAffine": "binary_connect_affine_param",
                       "BinaryWeightAffine": "binary_weight_affine_param",
                       "BinaryConnectConvolution": "binary_connect_convolution_param",
                       "BinaryWeightConvolution": "binary_weight_convolution_param"}[f.type])


def _to_nntxt(f: Any, p: Mapping[str, Any], in_shapes: list, out_shape: Shape, mode: str) -> None:
    q = _message(f)
    q.base_axis, q.quantize_zero_to = 1, 1.0
    if "kernel" in p:
        kernel = tuple(p["kernel"])
        set_shape(q.pad, per_dim(tuple(p["pad"]), kernel, "pad"))
        set_shape(q.stride, per_dim(tuple(p["stride"]), kernel, "stride"))
        set_shape(q.dilation, per_dim(tuple(p["dilation"]), kernel, "dilation"))
        q.group = int(p["group"])


def _from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> Dict[str, Any]:
    q = _message(f)
    if q.base_axis not in (0, 1):
        raise Unsupported(f"base_axis {q.base_axis} (nnconsole's layer flattens each sample)")
    w = basic._need_w(weights)
    if "Affine" in f.type:
        return {"out_shape": w[1:], "with_bias": "b" in weights}
    kernel = w[2:]
    return {"outmaps": w[0], "kernel": kernel, "pad": per_dim_or(dims(q.pad), len(kernel), 0),
            "stride": per_dim_or(dims(q.stride), len(kernel), 1),
            "dilation": per_dim_or(dims(q.dilation), len(kernel), 1), "group": int(q.group) or 1,
            "with_bias": "b" in weights}


def _register_binary(type_name: str, scaled: bool, conv: bool) -> None:
    scope = ("bwn" if scaled else "bicon") + ("_conv" if conv else "_affine")
    what = "scaled binary (+-alpha)" if scaled else "binary (+-1)"
    order = ("W", "Wb", "alpha", "b") if scaled else ("W", "Wb", "b")
    glorot = "UniformConvolutionGlorot" if conv else "UniformAffineGlorot"
    weights = {"W": Initializer(glorot), "Wb": _ZERO, "b": _ZERO}
    if scaled:
        weights["alpha"] = _ZERO
    common = dict(group="Quantize", n_inputs=(1, 1), weights=weights, non_trainable=("Wb", "alpha") if scaled else
                  ("Wb",), weight_scope=scope, weight_order=order, to_nntxt=_to_nntxt, from_nntxt=_from_nntxt)
    fn = f"binary_{'weight' if scaled else 'connect'}_{'convolution' if conv else 'affine'}"
    if conv:
        register(LayerSpec(
            type=type_name, doc=f"Convolution whose filters are {what} in the forward pass.",
            params=basic._conv_params(), output_shape=basic._conv_shape, weight_shapes=_conv_weights(scaled),
            build=_conv_build(fn), nnc_properties=basic._CONV_PROPERTIES, from_sdcproj=basic._conv_from_sdcproj,
            caption=basic._conv_caption, examples=(({"outmaps": 4, "kernel": [3, 3], "pad": [1, 1]}, ((2, 6, 6),)),),
            **common))
    else:
        register(LayerSpec(
            type=type_name, doc=f"Fully connected layer whose weights are {what} in the forward pass.",
            params=[ParamSpec("out_shape", "ints", (100,), "Output shape, e.g. [10] for 10 classes.", min=1),
                    ParamSpec("with_bias", "bool", True, "Add a learned bias b.")],
            output_shape=lambda ins, p: tuple(p["out_shape"]), weight_shapes=_affine_weights(scaled),
            build=_affine_build(fn),
            nnc_properties={"OutShape": "out_shape", "WithBias": "with_bias"},
            examples=(({"out_shape": [5]}, ((3, 4),)),), **common))


_register_binary("BinaryConnectAffine", False, False)
_register_binary("BinaryConnectConvolution", False, True)
_register_binary("BinaryWeightAffine", True, False)
_register_binary("BinaryWeightConvolution", True, True)


# ------------------------------------------------------------------------------------ MinMaxQuantize
def _mmq_build(ctx: Any, inputs: list, layer: Any) -> Any:
    import nnabla as nn  # deferred: nnabla stays out of the GUI
    import nnabla.functions as F  # deferred: nnabla stays out of the GUI
    from nnabla.parameter import get_parameter_or_create  # deferred: nnabla stays out of the GUI

    p, x = ctx.params(layer), inputs[0]
    shape = (1,) * x.ndim
    learned = {"r": not (p["x_min_max"] and p["ema"]), "R": not (p["x_min_max"] and p["ema"]), "l": False, "L": False}
    with nn.parameter_scope("min_max_quantize"):
        ranges = [get_parameter_or_create(k, shape, ctx.initializer(layer, k, 1, 1), learned[k]) for k in "rRlL"]
    return F.min_max_quantize(x, *ranges, decay=p["decay"], x_min_max=p["x_min_max"], ema=p["ema"],
                              ste_fine_grained=p["ste_fine_grained"], eps=p["eps"])


register(LayerSpec(
    type="MinMaxQuantize", group="Quantize",
    doc="Quantizes to the integer levels l..L of the range r..R (learned, or the inputs' min and max).",
    params=[ParamSpec("decay", "float", 0.999, "Decay of the moving average of min and max (ema).", min=0.0, max=1.0),
            ParamSpec("x_min_max", "bool", False, "Use the inputs' min and max as the range."),
            ParamSpec("ema", "bool", False, "Track the range as a moving average (with x_min_max)."),
            _STE, ParamSpec("eps", "float", 0.01, "Smallest range width.", min=0.0)],
    n_inputs=(1, 1), output_shape=lambda ins, p: tuple(ins[0]),
    weight_shapes=lambda ins, p: {k: (1,) * (len(ins[0]) + 1) for k in "rRlL"}, build=_mmq_build,
    weights={"r": Initializer("Constant", 1.0, -6.0), "R": Initializer("Constant", 1.0, 6.0),
             "l": Initializer("Constant", 1.0, 0.0), "L": Initializer("Constant", 1.0, 255.0)},
    non_trainable=("l", "L"), nnabla_function="min_max_quantize",
    nnc_properties={"Decay": "decay", "XMinMax": "x_min_max", "EMA": "ema", "STEFineGrained": "ste_fine_grained",
                    "Epsilon": "eps"},
    nntxt_fields={k: f"min_max_quantize_param.{k}" for k in ("decay", "x_min_max", "ema", "ste_fine_grained", "eps")},
    weight_scope="min_max_quantize", weight_order=("r", "R", "l", "L"),
    examples=(({"decay": 0.99}, ((3, 4),)),)))
