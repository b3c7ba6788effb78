"""Basic parametric layers: Affine, Convolution, Deconvolution and Embed.

nnabla parameter names (under the layer's own scope, so prefixed by the layer name):
Affine ``<name>/affine/W`` (in_size, *out_shape) and ``<name>/affine/b``;
Convolution ``<name>/conv/W`` (outmaps, channels/group, *kernel) and ``<name>/conv/b``;
Deconvolution ``<name>/deconv/W`` (channels, outmaps/group, *kernel) and ``<name>/deconv/b``;
Embed ``<name>/embed/W`` (n_inputs, n_features). These are what nnabla's parametric functions
produce, and the same names NNC writes into .nnp files.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping

from nnconsole.engine.project.model import Initializer

from nnconsole.engine.layers.captions import fmt_dims, nonzero, same
from nnconsole.engine.layers.nntxt_codec import Unsupported, dims, per_dim_or, set_shape
from nnconsole.engine.layers.registry import (LayerSpec, ParamSpec, Shape, ShapeError, fmt_shape, per_dim, prod,
                                              register)
from nnconsole.engine.layers.nnc_values import ints, resolve

_BIAS = Initializer("Constant", 1.0, 0.0)
_CONV_PROPERTIES = {"OutMaps": "outmaps", "KernelShape": "kernel", "Padding": "pad", "Strides": "stride",
                    "Dilation": "dilation", "Group": "group", "WithBias": "with_bias"}


def _need_w(weights: Mapping[str, list]) -> list:
    if "W" not in weights:
        raise Unsupported("its weight W is not a parameter")
    return weights["W"]


def _affine_to_nntxt(f: Any, p: Mapping[str, Any], in_shapes: list, out_shape: Shape, mode: str) -> None:
    f.affine_param.base_axis = 1


def _affine_from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> Dict[str, Any]:
    if f.HasField("affine_param") and f.affine_param.base_axis not in (0, 1):
        raise Unsupported(f"base_axis {f.affine_param.base_axis} (nnconsole's Affine flattens each sample)")
    return {"out_shape": _need_w(weights)[1:], "with_bias": "b" in weights}

# ---------------------------------------------------------------------------------------- Affine


def _affine_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    return tuple(p["out_shape"])


def _affine_weights(ins: List[Shape], p: Mapping[str, Any]) -> Dict[str, Shape]:
    out = tuple(p["out_shape"])
    w = {"W": (prod(ins[0]),) + out}
    if p["with_bias"]:
        w["b"] = out
    return w


def _affine_build(ctx, inputs, layer):
    import nnabla.parametric_functions as PF  # deferred: nnabla stays out of the GUI

    p = ctx.params(layer)
    x = inputs[0]
    out = list(p["out_shape"])
    w_init = ctx.initializer(layer, "W", prod(x.shape[1:]), prod(out))
    b_init = ctx.initializer(layer, "b", prod(x.shape[1:]), prod(out)) if p["with_bias"] else None
    return PF.affine(x, out, base_axis=1, w_init=w_init, b_init=b_init, with_bias=p["with_bias"])


register(LayerSpec(
    type="Affine", group="Basic",
    doc="Fully connected layer: flattens each sample and multiplies it by a weight matrix (plus bias).",
    params=[
        ParamSpec("out_shape", "ints", (100,), "Output shape, e.g. [10] for 10 classes.", min=1),
        ParamSpec("with_bias", "bool", True, "Add a learned bias b."),
    ],
    n_inputs=(1, 1),
    output_shape=_affine_shape,
    weight_shapes=_affine_weights,
    macs=lambda ins, out, p: prod(ins[0]) * prod(out),
    build=_affine_build,
    weights={"W": Initializer("NormalAffineGlorot"), "b": _BIAS},
    nnc_properties={"OutShape": "out_shape", "WithBias": "with_bias"},
    weight_scope="affine", weight_order=("W", "b"),
    to_nntxt=_affine_to_nntxt, from_nntxt=_affine_from_nntxt,
    caption=lambda p: f"{fmt_dims(p.get('out_shape'))} units",
))

# ------------------------------------------------------------------------------- Convolution


def _conv_geometry(layer_type: str, ins: List[Shape], p: Mapping[str, Any]):
    kernel = tuple(p["kernel"])
    n = len(kernel)
    x = ins[0]
    if len(x) != n + 1:
        dims = {1: "L", 2: "H, W", 3: "D, H, W"}.get(n, "...")
        raise ShapeError(f"{layer_type} with a {n}-D kernel {list(kernel)} expects an input of shape "
                         f"(channels, {dims}), got {fmt_shape(x)}")
    pad = per_dim(p["pad"], kernel, "pad")
    stride = per_dim(p["stride"], kernel, "stride")
    dilation = per_dim(p["dilation"], kernel, "dilation")
    channels, group, outmaps = x[0], p["group"], p["outmaps"]
    if channels % group or outmaps % group:
        raise ShapeError(f"{layer_type} group {group} must divide both the input channels ({channels}) "
                         f"and outmaps ({outmaps})")
    return kernel, pad, stride, dilation, channels, group, outmaps


def _conv_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    kernel, pad, stride, dilation, c, g, outmaps = _conv_geometry("Convolution", ins, p)
    spatial = []
    for i, (size, k, pd, s, d) in enumerate(zip(ins[0][1:], kernel, pad, stride, dilation)):
        span = d * (k - 1) + 1
        if size + 2 * pd < span:
            raise ShapeError(f"Convolution kernel {list(kernel)} (dilated span {span}) is larger than the padded "
                             f"input {fmt_shape(ins[0])} in spatial dimension {i}; "
                             "use a smaller kernel, more pad or a larger input")
        spatial.append((size + 2 * pd - span) // s + 1)
    return (outmaps,) + tuple(spatial)


def _conv_weights(ins: List[Shape], p: Mapping[str, Any]) -> Dict[str, Shape]:
    kernel = tuple(p["kernel"])
    w = {"W": (p["outmaps"], ins[0][0] // p["group"]) + kernel}
    if p["with_bias"]:
        w["b"] = (p["outmaps"],)
    return w


def _conv_build(ctx, inputs, layer):
    import nnabla.parametric_functions as PF  # deferred: nnabla stays out of the GUI

    p = ctx.params(layer)
    x = inputs[0]
    kernel, pad, stride, dilation, _, group, outmaps = _conv_geometry("Convolution", [tuple(x.shape[1:])], p)
    fans = (x.shape[1], outmaps, kernel)
    return PF.convolution(
        x, outmaps, kernel, pad=pad, stride=stride, dilation=dilation, group=group,
        w_init=ctx.initializer(layer, "W", *fans),
        b_init=ctx.initializer(layer, "b", *fans) if p["with_bias"] else None,
        with_bias=p["with_bias"])


def _conv_params(default_outmaps: int = 16) -> List[ParamSpec]:
    return [
        ParamSpec("outmaps", "int", default_outmaps, "Number of output channels (filters).", min=1),
        ParamSpec("kernel", "ints", (5, 5), "Kernel shape, one entry per spatial dimension, e.g. [3, 3].",
                  min=1, max_len=3, example=(3, 3)),
        ParamSpec("pad", "ints", (0, 0), "Zero padding per spatial dimension (equal values are repeated as needed).",
                  min=0, max_len=3),
        ParamSpec("stride", "ints", (1, 1), "Stride per spatial dimension (equal values are repeated as needed).",
                  min=1, max_len=3),
        ParamSpec("dilation", "ints", (1, 1), "Dilation per spatial dimension (equal values are repeated as needed).",
                  min=1, max_len=3),
        ParamSpec("group", "int", 1, "Number of channel groups (must divide channels and outmaps).", min=1),
        ParamSpec("with_bias", "bool", True, "Add a learned bias per output channel."),
    ]


def _conv_to_nntxt(f: Any, p: Mapping[str, Any], in_shapes: list, out_shape: Shape, mode: str) -> None:
    deconv = f.type == "Deconvolution"
    q = f.deconvolution_param if deconv else f.convolution_param
    kernel = tuple(p["kernel"])
    n = len(kernel)
    set_shape(q.pad, per_dim(tuple(p["pad"]) or (0,) * n, kernel, "pad"))
    set_shape(q.stride, per_dim(tuple(p["stride"]) or (1,) * n, kernel, "stride"))
    set_shape(q.dilation, per_dim(tuple(p["dilation"]) or (1,) * n, kernel, "dilation"))
    q.group = int(p["group"])
    q.base_axis = 1
    if deconv:
        set_shape(q.output_padding, [0] * n)


def _conv_from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> Dict[str, Any]:
    deconv = f.type == "Deconvolution"
    p = f.deconvolution_param if deconv else f.convolution_param
    if p.channel_last:
        raise Unsupported("channel_last (nnconsole uses channels first)")
    if p.base_axis not in (0, 1):
        raise Unsupported(f"base_axis {p.base_axis}")
    if deconv and any(dims(p.output_padding)):
        raise Unsupported(f"output_padding {dims(p.output_padding)}")
    w = _need_w(weights)
    kernel = w[2:]
    group = int(p.group) or 1
    outmaps = w[1] * group if deconv else w[0]
    return {"outmaps": outmaps, "kernel": kernel, "pad": per_dim_or(dims(p.pad), len(kernel), 0),
            "stride": per_dim_or(dims(p.stride), len(kernel), 1),
            "dilation": per_dim_or(dims(p.dilation), len(kernel), 1), "group": group, "with_bias": "b" in weights}


def _conv_from_sdcproj(name: str, props: Dict[str, str], params: Dict[str, Any], unsupported: list) -> set:
    """NNC's Padding is often the macro *ConvolutionPaddingSize, computed from BorderMode: valid 0,
    same (k-1)/2, full k-1 (times the dilation). When the kernel is an Argument (``*ConvKernel``), the pad keeps
    the BorderMode ('same') and ``network.arguments`` computes it once the kernel is known."""

    value = resolve(props, "Padding")
    if "Padding" not in props or (value is not None and not value.startswith("*")):
        return set()
    mode = (resolve(props, "BorderMode") or "valid").strip().lower()
    if any((resolve(props, k) or "").startswith("*") for k in ("KernelShape", "Dilation")):
        params["pad"] = mode if mode in ("same", "full") else "valid"  # computed once the argument kernel is known
        return {"Padding"}
    kernel = ints(resolve(props, "KernelShape") or "") or [5, 5]
    dilation = ints(resolve(props, "Dilation") or "") or [1] * len(kernel)
    dil = dilation if len(dilation) == len(kernel) else [1] * len(kernel)
    if mode == "same":
        params["pad"] = [d * (k - 1) // 2 for k, d in zip(kernel, dil)]
    elif mode == "full":
        params["pad"] = [d * (k - 1) for k, d in zip(kernel, dil)]
    else:
        params["pad"] = [0] * len(kernel)
    return {"Padding"}


def conv_pad_to_sdcproj(params: Mapping[str, Any]) -> Dict[str, str]:
    """A pad kept as NNC's BorderMode (its kernel an Argument) is written back as NNC computes it."""
    pad = params.get("pad")
    return {"Padding": "*ConvolutionPaddingSize", "BorderMode": pad} if isinstance(pad, str) else {}


def _conv_caption(p: Mapping[str, Any]) -> str:
    parts = [f"{p.get('outmaps')} maps", fmt_dims(p.get("kernel", ()))]
    if any(s != 1 for s in p.get("stride", ())):
        parts.append(f"stride {same(p['stride'])}")
    if nonzero(p.get("pad", ())):
        parts.append(f"pad {same(p['pad'])}")
    return " · ".join(parts)


_CONV_INTERCHANGE = dict(nnc_properties=_CONV_PROPERTIES, weight_order=("W", "b"), to_nntxt=_conv_to_nntxt,
                         to_sdcproj=conv_pad_to_sdcproj,
                         from_nntxt=_conv_from_nntxt, from_sdcproj=_conv_from_sdcproj, caption=_conv_caption,
                         examples=(({"outmaps": 4, "kernel": [3, 3], "pad": [1, 1], "stride": [2, 2]}, ((3, 8, 8),)),
                                   ({"outmaps": 4, "kernel": [3, 3], "group": 2, "with_bias": False}, ((4, 9, 9),))))


register(LayerSpec(
    type="Convolution", group="Basic",
    doc="N-D convolution over (channels, *spatial) inputs with learned filters (plus bias).",
    params=_conv_params(),
    n_inputs=(1, 1),
    output_shape=_conv_shape,
    weight_shapes=_conv_weights,
    macs=lambda ins, out, p: prod(out) * (ins[0][0] // p["group"]) * prod(p["kernel"]),
    build=_conv_build,
    weights={"W": Initializer("NormalConvolutionGlorot"), "b": _BIAS},
    weight_scope="conv", **_CONV_INTERCHANGE,
))

# ----------------------------------------------------------------------------- Deconvolution


def _deconv_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    kernel, pad, stride, dilation, c, g, outmaps = _conv_geometry("Deconvolution", ins, p)
    spatial = []
    for i, (size, k, pd, s, d) in enumerate(zip(ins[0][1:], kernel, pad, stride, dilation)):
        o = s * (size - 1) + d * (k - 1) + 1 - 2 * pd
        if o < 1:
            raise ShapeError(f"Deconvolution pad {list(pad)} is too large for input {fmt_shape(ins[0])}: "
                             f"spatial dimension {i} would have size {o}")
        spatial.append(o)
    return (outmaps,) + tuple(spatial)


def _deconv_weights(ins: List[Shape], p: Mapping[str, Any]) -> Dict[str, Shape]:
    w = {"W": (ins[0][0], p["outmaps"] // p["group"]) + tuple(p["kernel"])}
    if p["with_bias"]:
        w["b"] = (p["outmaps"],)
    return w


def _deconv_build(ctx, inputs, layer):
    import nnabla.parametric_functions as PF  # deferred: nnabla stays out of the GUI

    p = ctx.params(layer)
    x = inputs[0]
    kernel, pad, stride, dilation, _, group, outmaps = _conv_geometry("Deconvolution", [tuple(x.shape[1:])], p)
    fans = (outmaps, x.shape[1], kernel)  # the order nnabla's PF.deconvolution uses
    return PF.deconvolution(
        x, outmaps, kernel, pad=pad, stride=stride, dilation=dilation, group=group,
        w_init=ctx.initializer(layer, "W", *fans),
        b_init=ctx.initializer(layer, "b", *fans) if p["with_bias"] else None,
        with_bias=p["with_bias"])


register(LayerSpec(
    type="Deconvolution", group="Basic",
    doc="Transposed convolution: upsamples (channels, *spatial) inputs with learned filters (plus bias).",
    params=_conv_params(),
    n_inputs=(1, 1),
    output_shape=_deconv_shape,
    weight_shapes=_deconv_weights,
    macs=lambda ins, out, p: prod(ins[0]) * (p["outmaps"] // p["group"]) * prod(p["kernel"]),
    build=_deconv_build,
    weights={"W": Initializer("NormalConvolutionGlorot"), "b": _BIAS},
    weight_scope="deconv", **_CONV_INTERCHANGE,
))

# ------------------------------------------------------------------------------------- Embed


def _embed_build(ctx, inputs, layer):
    import nnabla.parametric_functions as PF  # deferred: nnabla stays out of the GUI

    p = ctx.params(layer)
    init = ctx.initializer(layer, "W", p["n_inputs"], p["n_features"])
    return PF.embed(inputs[0], p["n_inputs"], p["n_features"], initializer=init)


def _embed_from_sdcproj(name: str, props: Dict[str, str], params: Dict[str, Any], unsupported: list) -> set:
    """NNC's Shape is a list; nnconsole's Embed has 1-D features."""

    value = resolve(props, "Shape")
    if value is None or value.startswith("*"):
        return set()
    params.pop("n_features", None)
    try:
        shape = ints(value)
        if len(shape) != 1:
            raise ValueError(f"nnconsole's Embed has 1-D features, got Shape {value}")
        params["n_features"] = shape[0]
    except ValueError as exc:
        unsupported.append(f"layer '{name}' (Embed): property Shape={value} not usable ({exc}); "
                           "nnconsole's default is used")
    return {"Shape"}


register(LayerSpec(
    type="Embed", group="Basic",
    doc="Looks up a learned feature vector for each integer index in the input (0 .. n_inputs-1).",
    params=[
        ParamSpec("n_inputs", "int", 10, "Number of distinct indices (vocabulary size).", min=1),
        ParamSpec("n_features", "int", 16, "Length of each embedding vector.", min=1),
    ],
    n_inputs=(1, 1),
    output_shape=lambda ins, p: tuple(ins[0]) + (p["n_features"],),
    weight_shapes=lambda ins, p: {"W": (p["n_inputs"], p["n_features"])},
    build=_embed_build,
    weights={"W": Initializer("Normal", 1.0)},
    nnc_properties={"NumClass": "n_inputs", "Shape": "n_features"},
    weight_scope="embed", weight_order=("W",),
    from_nntxt=lambda f, ins, w: {"n_inputs": _need_w(w)[0], "n_features": _need_w(w)[1]},
    from_sdcproj=_embed_from_sdcproj,
    caption=lambda p: f"{p.get('n_inputs')} → {p.get('n_features')}",
))
