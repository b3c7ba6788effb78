"""Pooling layers: MaxPooling, AveragePooling, GlobalAveragePooling and Unpooling.

Pooling works on the last len(kernel) axes (2 or 3, as nnabla supports). Output sizes follow
nnabla exactly: with ignore_border (NNC's default) ``(size + 2 pad - kernel) // stride + 1``;
without it ``(size + pad - 1) // stride + 1`` (partial windows at the border are kept).
"""
from __future__ import annotations

from typing import Any, List, Mapping, Tuple

from .registry import LayerSpec, ParamSpec, Shape, ShapeError, fmt_shape, per_dim, register


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
        import nnabla.functions as F

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


register(LayerSpec(
    type="MaxPooling", group="Pooling",
    doc="Takes the maximum over each window of the last 2 or 3 axes.",
    params=_pool_params(), n_inputs=(1, 1),
    output_shape=_pool_shape("MaxPooling"), build=_pool_build("max_pooling"),
))

register(LayerSpec(
    type="AveragePooling", group="Pooling",
    doc="Takes the mean over each window of the last 2 or 3 axes.",
    params=_pool_params(including_pad=True), n_inputs=(1, 1),
    output_shape=_pool_shape("AveragePooling"), build=_pool_build("average_pooling"),
))


def _gap_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    x = ins[0]
    if len(x) < 2:
        raise ShapeError(f"GlobalAveragePooling expects an input of shape (channels, H, W), got {fmt_shape(x)}")
    return (x[0], 1, 1)


def _gap_build(ctx, inputs, layer):
    import nnabla.functions as F
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
    import nnabla.functions as F
    return F.unpooling(inputs[0], tuple(ctx.params(layer)["kernel"]))


register(LayerSpec(
    type="Unpooling", group="Pooling",
    doc="Upsamples the last axes by repeating each value kernel times along each of them.",
    params=[ParamSpec("kernel", "ints", (2, 2), "Repeat factor per trailing axis, e.g. [2, 2].",
                      min=1, max_len=3)],
    n_inputs=(1, 1), output_shape=_unpool_shape, build=_unpool_build,
))
