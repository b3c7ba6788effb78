"""NNC's Others category, the layers that keep each element's place: ResetNaN, ResetInf, Unlink, Prune,
ClipGradByNorm, TopKData and TopKGrad.

Axes exclude the batch axis (nnabla's BaseAxis is always 1: one sample per batch entry, as NNC's
BaseAxis 0 without the batch axis means).
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping

from nnconsole.engine.layers.factory import function_layer
from nnconsole.engine.layers.nntxt_codec import Unsupported, axis_from_nnabla
from nnconsole.engine.layers.registry import ParamSpec, Shape, ShapeError, fmt_shape, norm_axis

_GROUP = "Other"

function_layer("ResetNaN", _GROUP, "reset_nan", "Replaces NaN values by 0.")
function_layer("ResetInf", _GROUP, "reset_inf", "Replaces infinite values by 0.")
function_layer("Unlink", _GROUP, "unlink", "Passes values forward but no gradient backward.")
function_layer("Prune", _GROUP, "prune", "Zeroes the smallest-magnitude fraction rate of the elements.",
               [ParamSpec("rate", "float", 0.9, "Fraction of elements set to zero.", min=0.0, max=1.0)],
               caption_always=True)


# ------------------------------------------------------------------------------ ClipGradByNorm
def _clip_norm_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    for a in p["axes"]:
        norm_axis(a, len(ins[0]), "ClipGradByNorm axis")
    return tuple(ins[0])


def _clip_norm_build(ctx: Any, inputs: list, layer: Any) -> Any:
    import nnabla.functions as F  # deferred: nnabla stays out of the GUI
    p = ctx.params(layer)
    ndim = len(inputs[0].shape) - 1
    return F.clip_grad_by_norm(inputs[0], p["clip_norm"], [norm_axis(a, ndim) + 1 for a in p["axes"]])


function_layer("ClipGradByNorm", _GROUP, "clip_grad_by_norm",
               "Identity forward; backward, rescales the gradient so that its norm over axes is clip_norm.",
               [ParamSpec("clip_norm", "float", 1.0, "Norm of the clipped gradient.", min=0.0),
                ParamSpec("axes", "ints", (0,), "Axes the norm is taken over, without the batch axis.")],
               output_shape=_clip_norm_shape, build=_clip_norm_build, nnabla_function="")


# ---------------------------------------------------------------------------------- TopKData/Grad
def _top_k_shape(type_name: str):
    def rule(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
        n = 1
        for s in ins[0]:
            n *= s
        if p["k"] > n:
            raise ShapeError(f"{type_name} k {p['k']} is larger than the {n} elements of each sample "
                             f"(input {fmt_shape(ins[0])})")
        return (p["k"],) if p.get("reduce") else tuple(ins[0])
    return rule


def _top_k_build(fn: str):
    def build(ctx: Any, inputs: list, layer: Any) -> Any:
        import nnabla.functions as F  # deferred: nnabla stays out of the GUI
        return getattr(F, fn)(inputs[0], base_axis=1, **ctx.params(layer))
    return build


def _top_k_to_nntxt(f: Any, p: Mapping[str, Any], in_shapes: list, out_shape: Shape, mode: str) -> None:
    q = f.top_k_data_param if f.type == "TopKData" else f.top_k_grad_param
    q.k, q.abs, q.base_axis = int(p["k"]), bool(p["abs"]), 1
    if f.type == "TopKData":
        q.reduce, q.largest = bool(p["reduce"]), True


def _top_k_from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> Dict[str, Any]:
    q = f.top_k_data_param if f.type == "TopKData" else f.top_k_grad_param
    if axis_from_nnabla(q.base_axis) != 0:
        raise Unsupported(f"base_axis {q.base_axis} (nnconsole keeps one sample per batch entry)")
    out: Dict[str, Any] = {"k": int(q.k), "abs": bool(q.abs)}
    if f.type == "TopKData":
        if q.with_index or not q.largest:
            raise Unsupported("with_index / smallest values")
        out["reduce"] = bool(q.reduce)
    return out


_K = ParamSpec("k", "int", 1, "Number of values kept.", min=1)
_ABS = ParamSpec("abs", "bool", False, "Rank by absolute value.")
function_layer("TopKData", _GROUP, "top_k_data", "Keeps the k largest values of each sample (the rest are "
               "dropped when reduce, zeroed otherwise).",
               [_K, _ABS, ParamSpec("reduce", "bool", True, "Output only the k values.")],
               output_shape=_top_k_shape("TopKData"), build=_top_k_build("top_k_data"), nnabla_function="",
               to_nntxt=_top_k_to_nntxt, from_nntxt=_top_k_from_nntxt,
               examples=(({"k": 3}, ((3, 4),)), ({"k": 2, "reduce": False, "abs": True}, ((5,),))))
function_layer("TopKGrad", _GROUP, "top_k_grad", "Identity forward; backward, keeps the k largest gradients of "
               "each sample.", [_K, _ABS],
               output_shape=_top_k_shape("TopKGrad"), build=_top_k_build("top_k_grad"), nnabla_function="",
               to_nntxt=_top_k_to_nntxt, from_nntxt=_top_k_from_nntxt)
