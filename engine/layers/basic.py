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

from .registry import LayerSpec, ParamSpec, Shape, ShapeError, fmt_shape, per_dim, prod, register

_BIAS = Initializer("Constant", 1.0, 0.0)

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
    import nnabla.parametric_functions as PF

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
    import nnabla.parametric_functions as PF

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
    import nnabla.parametric_functions as PF

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
))

# ------------------------------------------------------------------------------------- Embed


def _embed_build(ctx, inputs, layer):
    import nnabla.parametric_functions as PF

    p = ctx.params(layer)
    init = ctx.initializer(layer, "W", p["n_inputs"], p["n_features"])
    return PF.embed(inputs[0], p["n_inputs"], p["n_features"], initializer=init)


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
))
