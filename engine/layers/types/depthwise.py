"""NNC's Basic layers DepthwiseConvolution and DepthwiseDeconvolution (MobileNet-style separable
convolutions): each input channel has its own filters, ``multiplier`` of them (deconvolution: every
``divisor`` channels are summed into one output channel).

nnabla parameter names: ``<name>/depthwise_conv/W`` (channels * multiplier, *kernel) and ``.../b``;
``<name>/depthwise_deconv/W`` (channels, *kernel) and ``.../b`` (channels / divisor).
NNC's OutMaps and Group are computed from the input (Input[0] * Multiplier, Input[0]).
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping

from nnconsole.engine.project.model import Initializer

from nnconsole.engine.layers.types import basic
from nnconsole.engine.layers.captions import fmt_dims
from nnconsole.engine.layers.nntxt_codec import Unsupported, dims, per_dim_or, set_shape
from nnconsole.engine.layers.registry import (LayerSpec, ParamSpec, Shape, ShapeError, fmt_shape, per_dim, prod,
                                              register)

_ZERO = Initializer("Constant", 1.0, 0.0)


def _params(factor: str, doc: str) -> List[ParamSpec]:
    p = [q for q in basic._conv_params() if q.name not in ("outmaps", "group")]
    p.insert(4, ParamSpec(factor, "int", 1, doc, min=1))
    return p


def _geometry(type_name: str, x: Shape, p: Mapping[str, Any]):
    kernel = tuple(p["kernel"])
    if len(kernel) > 2:
        raise ShapeError(f"{type_name} kernels are 1-D or 2-D in nnabla, got {list(kernel)}; use Convolution with "
                         "group = channels for a 3-D depthwise convolution")
    if len(x) != len(kernel) + 1:
        raise ShapeError(f"{type_name} with a {len(kernel)}-D kernel {list(kernel)} expects an input of shape "
                         f"(channels, {len(kernel)} spatial axes), got {fmt_shape(x)}")
    return (kernel, per_dim(p["pad"], kernel, "pad", type_name), per_dim(p["stride"], kernel, "stride", type_name),
            per_dim(p["dilation"], kernel, "dilation", type_name))


def _conv_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    x = tuple(ins[0])
    kernel, pad, stride, dilation = _geometry("DepthwiseConvolution", x, p)
    out = []
    for size, k, pd, s, d in zip(x[1:], kernel, pad, stride, dilation):
        span = d * (k - 1) + 1
        if size + 2 * pd < span:
            raise ShapeError(f"DepthwiseConvolution kernel {list(kernel)} is larger than the padded input "
                             f"{fmt_shape(x)}; use a smaller kernel, more pad or a larger input")
        out.append((size + 2 * pd - span) // s + 1)
    return (x[0] * p["multiplier"],) + tuple(out)


def _deconv_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    x = tuple(ins[0])
    kernel, pad, stride, dilation = _geometry("DepthwiseDeconvolution", x, p)
    if x[0] % p["divisor"]:
        raise ShapeError(f"DepthwiseDeconvolution divisor {p['divisor']} must divide the input channels ({x[0]})")
    out = []
    for size, k, pd, s, d in zip(x[1:], kernel, pad, stride, dilation):
        o = s * (size - 1) + d * (k - 1) + 1 - 2 * pd
        if o < 1:
            raise ShapeError(f"DepthwiseDeconvolution pad {list(pad)} is too large for input {fmt_shape(x)}")
        out.append(o)
    return (x[0] // p["divisor"],) + tuple(out)


def _conv_weights(ins: List[Shape], p: Mapping[str, Any]) -> Dict[str, Shape]:
    maps = ins[0][0] * p["multiplier"]
    w = {"W": (maps,) + tuple(p["kernel"])}
    if p["with_bias"]:
        w["b"] = (maps,)
    return w


def _deconv_weights(ins: List[Shape], p: Mapping[str, Any]) -> Dict[str, Shape]:
    w = {"W": (ins[0][0],) + tuple(p["kernel"])}
    if p["with_bias"]:
        w["b"] = (ins[0][0] // p["divisor"],)
    return w


def _build(deconv: bool):
    def build(ctx: Any, inputs: list, layer: Any) -> Any:
        import nnabla.parametric_functions as PF  # deferred: nnabla stays out of the GUI

        p, x = ctx.params(layer), inputs[0]
        kernel, pad, stride, dilation = _geometry(layer.type, tuple(x.shape[1:]), p)
        c = x.shape[1]
        fans = (c, c // p["divisor"] if deconv else c * p["multiplier"], kernel)
        kw = dict(pad=pad, stride=stride, dilation=dilation, w_init=ctx.initializer(layer, "W", *fans),
                  b_init=ctx.initializer(layer, "b", *fans) if p["with_bias"] else None, with_bias=p["with_bias"])
        if deconv:
            return PF.depthwise_deconvolution(x, kernel, divisor=p["divisor"], **kw)
        return PF.depthwise_convolution(x, kernel, multiplier=p["multiplier"], **kw)
    return build


def _message(f: Any) -> Any:
    return f.depthwise_deconvolution_param if f.type == "DepthwiseDeconvolution" else f.depthwise_convolution_param


def _to_nntxt(f: Any, p: Mapping[str, Any], in_shapes: list, out_shape: Shape, mode: str) -> None:
    q, kernel = _message(f), tuple(p["kernel"])
    q.base_axis = 1
    set_shape(q.pad, per_dim(p["pad"], kernel, "pad"))
    set_shape(q.stride, per_dim(p["stride"], kernel, "stride"))
    set_shape(q.dilation, per_dim(p["dilation"], kernel, "dilation"))
    if f.type == "DepthwiseDeconvolution":
        q.divisor = int(p["divisor"])
    else:
        q.multiplier = int(p["multiplier"])


def _from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> Dict[str, Any]:
    q = _message(f)
    if q.base_axis not in (0, 1):
        raise Unsupported(f"base_axis {q.base_axis}")
    kernel = basic._need_w(weights)[1:]
    out = {"kernel": kernel, "pad": per_dim_or(dims(q.pad), len(kernel), 0),
           "stride": per_dim_or(dims(q.stride), len(kernel), 1),
           "dilation": per_dim_or(dims(q.dilation), len(kernel), 1), "with_bias": "b" in weights}
    if f.type == "DepthwiseDeconvolution":
        out["divisor"] = int(q.divisor) or 1
    else:
        out["multiplier"] = int(q.multiplier) or 1
    return out


def _from_sdcproj(name: str, props: Dict[str, str], params: Dict[str, Any], unsupported: list) -> set:
    """OutMaps and Group are NNC's read-only results of the input's channels; Padding may be the
    *ConvolutionPaddingSize macro (see basic's Convolution)."""
    return {"OutMaps", "Group"} | set(basic._conv_from_sdcproj(name, props, params, unsupported))


_PROPERTIES = {"KernelShape": "kernel", "Padding": "pad", "Strides": "stride", "Dilation": "dilation",
               "WithBias": "with_bias"}
for _type, _deconv in (("DepthwiseConvolution", False), ("DepthwiseDeconvolution", True)):
    _factor = "divisor" if _deconv else "multiplier"
    register(LayerSpec(
        type=_type, group="Basic",
        doc=("Transposed depthwise convolution: upsamples each channel with its own filter, summing every divisor "
             "channels." if _deconv else "Depthwise convolution: each channel is filtered on its own by multiplier "
             "filters (MobileNet's separable convolutions)."),
        params=_params(_factor, "Input channels per output channel." if _deconv else "Filters per input channel."),
        n_inputs=(1, 1), output_shape=_deconv_shape if _deconv else _conv_shape,
        weight_shapes=_deconv_weights if _deconv else _conv_weights,
        macs=(lambda ins, out, p: prod(ins[0]) * prod(p["kernel"])) if _deconv else
        (lambda ins, out, p: prod(out) * prod(p["kernel"])),
        build=_build(_deconv), weights={"W": Initializer("NormalConvolutionGlorot"), "b": _ZERO},
        nnc_properties={**_PROPERTIES, ("Divisor" if _deconv else "Multiplier"): _factor},
        weight_scope="depthwise_deconv" if _deconv else "depthwise_conv", weight_order=("W", "b"),
        to_nntxt=_to_nntxt, from_nntxt=_from_nntxt, from_sdcproj=_from_sdcproj, to_sdcproj=basic.conv_pad_to_sdcproj,
        caption=lambda p: fmt_dims(p.get("kernel", ())),
        examples=(({"kernel": [3, 3], "pad": [1, 1], "stride": [2, 2], _factor: 2}, ((4, 8, 8),)),
                  ({"kernel": [3, 3], "with_bias": False}, ((2, 5, 5),))),
    ))
