"""NNC's Normalization layers that rescale a whole tensor (in NNC usually a weight from a Parameter
layer): NormNormalization, WeightStandardization, WeightNormalization and SpectralNorm.

Here their input is any layer's output, whose first axis is the batch: axes and dims exclude it, as
NNC's sheet does, except that NormNormalization's axis -1 (in NNC's default -1,0,1,2) is the batch
axis. Parameters: ``<name>/wn/g`` (learned, one per slice along dim, initialised to 1) and
``<name>/sn/u`` (the power iteration's vector: stored and updated, never learned).
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping

from nnconsole.engine.project.model import Initializer

from nnconsole.engine.layers.factory import function_layer
from nnconsole.engine.layers.nntxt_codec import Unsupported, f7
from nnconsole.engine.layers.registry import LayerSpec, ParamSpec, Shape, ShapeError, fmt_shape, norm_axis, register

_ONE = Initializer("Constant", 1.0, 1.0)


# ----------------------------------------------------------------------------------- NormNormalization
def _nn_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    x = tuple(ins[0])
    if len(set(p["axes"])) != len(p["axes"]):
        raise ShapeError(f"NormNormalization axes {list(p['axes'])} repeat an axis; name each axis once")
    for a in p["axes"]:
        if not -1 <= a < len(x):
            raise ShapeError(f"NormNormalization axis {a} is out of range for input {fmt_shape(x)}: use -1 (the batch "
                             f"axis) to {len(x) - 1}")
    return x


def _nn_build(ctx: Any, inputs: list, layer: Any) -> Any:
    import nnabla.functions as F  # deferred: nnabla stays out of the GUI
    p = ctx.params(layer)
    return F.norm_normalization(inputs[0], p["p"], [a + 1 for a in p["axes"]], p["eps"])


def _nn_to_nntxt(f: Any, p: Mapping[str, Any], in_shapes: list, out_shape: Shape, mode: str) -> None:
    q = f.norm_normalization_param
    q.p, q.eps = float(p["p"]), float(p["eps"])
    q.axes.extend(int(a) + 1 for a in p["axes"])


def _nn_from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> Dict[str, Any]:
    q = f.norm_normalization_param
    ndim = len(in_shapes[0]) + 1 if in_shapes and in_shapes[0] is not None else 4
    axes = [int(a) + ndim if a < 0 else int(a) for a in q.axes] or list(range(ndim))
    return {"p": f7(q.p), "axes": [a - 1 for a in axes], "eps": f7(q.eps)}


function_layer("NormNormalization", "Normalization", "norm_normalization",
               "Divides the input by its p-norm over the given axes (-1 = the batch axis).",
               [ParamSpec("p", "float", 2.0, "Order of the norm.", min=0.0),
                ParamSpec("axes", "ints", (-1, 0, 1, 2), "Axes of the norm: -1 is the batch axis, 0 the first of "
                          "each sample.", min=-1),
                ParamSpec("eps", "float", 1e-12, "Added to the norm to avoid division by zero.", min=0.0)],
               output_shape=_nn_shape, build=_nn_build, nnc_properties={"P": "p", "Axes": "axes", "Epsilon": "eps"}, nnabla_function="", nntxt_fields={},
               to_nntxt=_nn_to_nntxt, from_nntxt=_nn_from_nntxt,
               examples=(({}, ((2, 3, 4),)), ({"axes": [0], "p": 1.0}, ((3, 4),))))


# ------------------------------------------------------------------------------ WeightStandardization
def _ws_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    norm_axis(p["channel_axis"], len(ins[0]), "WeightStandardization channel_axis")
    return tuple(ins[0])


def _ws_build(ctx: Any, inputs: list, layer: Any) -> Any:
    import nnabla.functions as F  # deferred: nnabla stays out of the GUI
    p = ctx.params(layer)
    return F.weight_standardization(inputs[0], p["channel_axis"] + 1, p["eps"])


def _ws_to_nntxt(f: Any, p: Mapping[str, Any], in_shapes: list, out_shape: Shape, mode: str) -> None:
    f.weight_standardization_param.channel_axis = int(p["channel_axis"]) + 1
    f.weight_standardization_param.eps = float(p["eps"])


function_layer("WeightStandardization", "Normalization", "weight_standardization",
               "Standardises each slice along channel_axis to mean 0 and variance 1 (over the batch too).",
               [ParamSpec("channel_axis", "int", 0, "Axis whose slices are standardised, without the batch axis.",
                          min=0),
                ParamSpec("eps", "float", 1e-5, "Added to the variance to avoid division by zero.", min=0.0)],
               output_shape=_ws_shape, build=_ws_build, nnc_properties={"ChannelAxis": "channel_axis", "Epsilon": "eps"}, nnabla_function="", nntxt_fields={}, to_nntxt=_ws_to_nntxt,
               from_nntxt=lambda f, ins, w: {"channel_axis": int(f.weight_standardization_param.channel_axis) - 1,
                                             "eps": f7(f.weight_standardization_param.eps)},
               examples=(({}, ((3, 4, 2),)),))


# ---------------------------------------------------------------------- WeightNormalization, SpectralNorm
def _dim(type_name: str, x: Shape, p: Mapping[str, Any]) -> int:
    d = p["dim"]
    if not 0 <= d < len(x):
        raise ShapeError(f"{type_name} dim {d} is out of range for input {fmt_shape(x)}; use 0..{len(x) - 1} "
                         "(without the batch axis)")
    return d


def _dim_weights(type_name: str, key: str):
    def rule(ins: List[Shape], p: Mapping[str, Any]) -> Dict[str, Shape]:
        x = tuple(ins[0])
        return {key: (x[_dim(type_name, x, p)],)}
    return rule


def _dim_shape(type_name: str):
    def rule(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
        _dim(type_name, tuple(ins[0]), p)
        return tuple(ins[0])
    return rule


def _dim_param(ctx: Any, layer: Any, x: Any, scope: str, key: str, need_grad: bool) -> Any:
    import nnabla as nn  # deferred: nnabla stays out of the GUI
    from nnabla.parameter import get_parameter_or_create  # deferred: nnabla stays out of the GUI
    n = x.shape[ctx.params(layer)["dim"] + 1]
    with nn.parameter_scope(scope):
        return get_parameter_or_create(key, (n,), ctx.initializer(layer, key, n, n), need_grad)


def _wn_build(ctx: Any, inputs: list, layer: Any) -> Any:
    import nnabla.functions as F  # deferred: nnabla stays out of the GUI
    p, x = ctx.params(layer), inputs[0]
    return F.weight_normalization(x, _dim_param(ctx, layer, x, "wn", "g", True), p["dim"] + 1, p["eps"])


def _sn_build(ctx: Any, inputs: list, layer: Any) -> Any:
    import nnabla.functions as F  # deferred: nnabla stays out of the GUI
    p, x = ctx.params(layer), inputs[0]
    u = _dim_param(ctx, layer, x, "sn", "u", False)
    return F.spectral_norm(x, u, p["dim"] + 1, p["itr"], p["eps"], test=not ctx.training)


def _dim_to_nntxt(f: Any, p: Mapping[str, Any], in_shapes: list, out_shape: Shape, mode: str) -> None:
    q = f.spectral_norm_param if f.type == "SpectralNorm" else f.weight_normalization_param
    q.dim, q.eps = int(p["dim"]) + 1, float(p["eps"])
    if f.type == "SpectralNorm":
        q.itr, q.test = int(p["itr"]), mode != "train"


def _dim_from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> Dict[str, Any]:
    q = f.spectral_norm_param if f.type == "SpectralNorm" else f.weight_normalization_param
    if q.dim < 1:
        raise Unsupported(f"dim {q.dim} (the batch axis)")
    out = {"dim": int(q.dim) - 1, "eps": f7(q.eps)}
    if f.type == "SpectralNorm":
        out["itr"] = int(q.itr) or 1
    return out


_DIM = ParamSpec("dim", "int", 0, "Axis of the slices, without the batch axis.", min=0)
_EPS12 = ParamSpec("eps", "float", 1e-12, "Added to the norm to avoid division by zero.", min=0.0)
register(LayerSpec(
    type="WeightNormalization", group="Normalization",
    doc="Rescales each slice along dim to unit norm times a learned scale g.",
    params=[_DIM, _EPS12], n_inputs=(1, 1), output_shape=_dim_shape("WeightNormalization"),
    weight_shapes=_dim_weights("WeightNormalization", "g"), build=_wn_build, weights={"g": _ONE},
    nnc_properties={"Dim": "dim", "Epsilon": "eps"}, weight_scope="wn", weight_order=("g",),
    to_nntxt=_dim_to_nntxt, from_nntxt=_dim_from_nntxt, examples=(({"dim": 1}, ((3, 4),)),)))
register(LayerSpec(
    type="SpectralNorm", group="Normalization",
    doc="Divides the input by its largest singular value (power iteration over the slices along dim).",
    params=[_DIM, ParamSpec("itr", "int", 1, "Power iterations per forward pass.", min=1), _EPS12],
    n_inputs=(1, 1), output_shape=_dim_shape("SpectralNorm"), weight_shapes=_dim_weights("SpectralNorm", "u"),
    build=_sn_build, weights={"u": _ONE}, non_trainable=("u",), inference_differs=True,
    nnc_properties={"Dim": "dim", "Itr": "itr", "Epsilon": "eps"}, weight_scope="sn", weight_order=("u",),
    to_nntxt=_dim_to_nntxt, from_nntxt=_dim_from_nntxt, examples=(({}, ((3, 4),)), ({"dim": 1}, ((2, 3, 4),)))))
