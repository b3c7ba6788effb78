"""Pooling layers: MaxPooling, AveragePooling, SumPooling, GlobalAveragePooling and Unpooling.

Pooling works on the last len(kernel) axes (2 or 3, as nnabla supports). Output sizes follow
nnabla exactly: with ignore_border (NNC's default) ``(size + 2 pad - kernel) // stride + 1``;
without it ``(size + pad - 1) // stride + 1`` (partial windows at the border are kept).
"""
from __future__ import annotations

from typing import Any, List, Mapping, Tuple

from nnconsole.engine.layers.captions import fmt_dims, nonzero, same
from nnconsole.engine.layers.nntxt_codec import Unsupported, dims, per_dim_or, set_shape
from nnconsole.engine.layers.registry import LayerSpec, ParamSpec, Shape, ShapeError, fmt_shape, per_dim, register


def _geometry(layer_type: str, x: Shape, p: Mapping[str, Any]) -> Tuple[tuple, tuple, tuple]:
    kernel = tuple(p["kernel"])
    n = len(kernel)
    if len(x) < n:
        raise ShapeError(f"{layer_type} with a {n}-D kernel {list(kernel)} needs an input with at least {n} "
                         f"dimensions, got {fmt_shape(x)}")
    stride = per_dim(tuple(p["stride"]) or kernel, kernel, "stride", layer_type)
    pad = per_dim(tuple(p["pad"]) or (0,) * n, kernel, "pad", layer_type)
    return kernel, stride, pad


def _pool_shape(layer_type: str):
    def rule(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
        x = ins[0]
        kernel, stride, pad = _geometry(layer_type, x, p)
        n = len(kernel)
        lead, spatial = tuple(x[:len(x) - n]), x[len(x) - n:]
        out = []
        for i, (size, k, s, pd) in enumerate(zip(spatial, kernel, stride, pad)):
            if p["ignore_border"]:
                if size + 2 * pd < k:
                    raise ShapeError(f"{layer_type} kernel {list(kernel)} is larger than the padded input "
                                     f"{fmt_shape(x)} in its last {n} dimensions; use a smaller kernel or pad")
                out.append((size + 2 * pd - k) // s + 1)
            else:
                out.append((size + pd - 1) // s + 1)
        return lead + tuple(out)
    return rule


def _pool_build(fn_name: str):
    def build(ctx, inputs, layer):
        import nnabla.functions as F  # deferred: nnabla stays out of the GUI

        p = ctx.params(layer)
        kernel, stride, pad = _geometry(layer.type, inputs[0].shape[1:], p)
        kwargs = {"including_pad": p["including_pad"]} if fn_name == "average_pooling" else {}
        return getattr(F, fn_name)(inputs[0], kernel, stride, p["ignore_border"], pad, **kwargs)
    return build


def _pool_params(including_pad: bool = False) -> List[ParamSpec]:
    params = [
        ParamSpec("kernel", "ints", (2, 2), "Window shape over the last 2 or 3 axes, e.g. [2, 2].",
                  min=1, min_len=2, max_len=3),
        ParamSpec("stride", "ints", (), "Step between windows; empty means the same as kernel.",
                  min=1, min_len=0, max_len=3, example=(2, 2)),
        ParamSpec("pad", "ints", (0, 0), "Padding per pooled axis (equal values are repeated as needed).",
                  min=0, min_len=0, max_len=3),
        ParamSpec("ignore_border", "bool", True, "Drop partial windows at the border (NNC's default)."),
    ]
    if including_pad:
        params.append(ParamSpec("including_pad", "bool", True, "Count padded zeros in the average."))
    return params


def _pool_message(f: Any) -> Any:
    if f.type == "MaxPooling":
        return f.max_pooling_param
    return f.sum_pooling_param if f.type == "SumPooling" else f.average_pooling_param


def _pool_to_nntxt(f: Any, p: Mapping[str, Any], in_shapes: list, out_shape: Shape, mode: str) -> None:
    q = _pool_message(f)
    kernel = tuple(p["kernel"])
    set_shape(q.kernel, kernel)
    set_shape(q.stride, per_dim(tuple(p["stride"]) or kernel, kernel, "stride", f.type))
    set_shape(q.pad, per_dim(tuple(p["pad"]) or (0,) * len(kernel), kernel, "pad", f.type))
    q.ignore_border = bool(p["ignore_border"])
    if f.type == "AveragePooling":
        q.including_pad = bool(p["including_pad"])


def _pool_from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> dict:
    q = _pool_message(f)
    if q.channel_last:
        raise Unsupported("channel_last (nnconsole uses channels first)")
    kernel = dims(q.kernel)
    out = {"kernel": kernel, "stride": dims(q.stride) or kernel,
           "pad": per_dim_or(dims(q.pad), len(kernel), 0), "ignore_border": bool(q.ignore_border)}
    if f.type == "AveragePooling":
        out["including_pad"] = bool(q.including_pad)
    return out


def _pool_caption(p: Mapping[str, Any]) -> str:
    parts = [fmt_dims(p.get("kernel", ()))]
    if p.get("stride") and list(p["stride"]) != list(p.get("kernel", ())):
        parts.append(f"stride {same(p['stride'])}")
    if nonzero(p.get("pad", ())):
        parts.append(f"pad {same(p['pad'])}")
    return " · ".join(parts)


_POOL_PROPERTIES = {"KernelShape": "kernel", "Strides": "stride", "Padding": "pad", "IgnoreBorder": "ignore_border"}
_POOL_INTERCHANGE = dict(to_nntxt=_pool_to_nntxt, from_nntxt=_pool_from_nntxt, caption=_pool_caption)

register(LayerSpec(
    type="MaxPooling", group="Pooling",
    doc="Takes the maximum over each window of the last 2 or 3 axes.",
    params=_pool_params(), n_inputs=(1, 1),
    output_shape=_pool_shape("MaxPooling"), build=_pool_build("max_pooling"),
    nnc_properties=_POOL_PROPERTIES, **_POOL_INTERCHANGE,
))

register(LayerSpec(
    type="AveragePooling", group="Pooling",
    doc="Takes the mean over each window of the last 2 or 3 axes.",
    params=_pool_params(including_pad=True), n_inputs=(1, 1),
    output_shape=_pool_shape("AveragePooling"), build=_pool_build("average_pooling"),
    nnc_properties={**_POOL_PROPERTIES, "IncludingPad": "including_pad"}, **_POOL_INTERCHANGE,
))

register(LayerSpec(
    type="SumPooling", group="Pooling",
    doc="Takes the sum over each window of the last 2 or 3 axes.",
    params=_pool_params(), n_inputs=(1, 1),
    output_shape=_pool_shape("SumPooling"), build=_pool_build("sum_pooling"),
    nnc_properties=_POOL_PROPERTIES, **_POOL_INTERCHANGE,
))


def _gap_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    x = ins[0]
    if len(x) < 2:
        raise ShapeError(f"GlobalAveragePooling expects an input of shape (channels, H, W), got {fmt_shape(x)}")
    return (x[0], 1, 1)


def _gap_build(ctx, inputs, layer):
    import nnabla.functions as F  # deferred: nnabla stays out of the GUI
    return F.global_average_pooling(inputs[0])


register(LayerSpec(
    type="GlobalAveragePooling", group="Pooling",
    doc="Averages each channel over all its positions: (channels, H, W) -> (channels, 1, 1).",
    params=[], n_inputs=(1, 1), output_shape=_gap_shape, build=_gap_build,
))


def _unpool_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    x, kernel = ins[0], tuple(p["kernel"])
    n = len(kernel)
    if len(x) < n:
        raise ShapeError(f"Unpooling with a {n}-D kernel {list(kernel)} needs an input with at least {n} "
                         f"dimensions, got {fmt_shape(x)}")
    lead = tuple(x[:len(x) - n])
    return lead + tuple(s * k for s, k in zip(x[len(x) - n:], kernel))


def _unpool_build(ctx, inputs, layer):
    import nnabla.functions as F  # deferred: nnabla stays out of the GUI
    return F.unpooling(inputs[0], tuple(ctx.params(layer)["kernel"]))


def _unpool_to_nntxt(f: Any, p: Mapping[str, Any], in_shapes: list, out_shape: Shape, mode: str) -> None:
    set_shape(f.unpooling_param.kernel, p["kernel"])


def _unpool_from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> dict:
    if f.unpooling_param.channel_last:
        raise Unsupported("channel_last (nnconsole uses channels first)")
    return {"kernel": dims(f.unpooling_param.kernel)}


register(LayerSpec(
    type="Unpooling", group="Pooling",
    doc="Upsamples the last axes by repeating each value kernel times along each of them.",
    params=[ParamSpec("kernel", "ints", (2, 2), "Repeat factor per trailing axis, e.g. [2, 2].",
                      min=1, max_len=3)],
    n_inputs=(1, 1), output_shape=_unpool_shape, build=_unpool_build,
    nnc_properties={"KernelShape": "kernel"}, to_nntxt=_unpool_to_nntxt, from_nntxt=_unpool_from_nntxt,
))
