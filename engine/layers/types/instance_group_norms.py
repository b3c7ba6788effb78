"""NNC's Normalization layers beyond Batch/LayerNormalization: InstanceNormalization,
GroupNormalization, FusedBatchNormalization, NormNormalization, WeightStandardization,
WeightNormalization and SpectralNorm.

Axes exclude the batch axis (NNC's sheet); nnabla's channel_axis/dim are one more. Parameters:
``<name>/instance_normalization/{beta,gamma}``, ``<name>/group_normalization/{beta,gamma}``
(shape (1, C, 1, ...), as nnabla stores them), ``<name>/bn/{beta,gamma,mean,var}`` (Fused),
``<name>/wn/g`` (learned scale per slice along dim) and ``<name>/sn/u`` (SpectralNorm's power-iteration
vector: stored, never learned).
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping

from nnconsole.engine.project.model import Initializer

from nnconsole.engine.layers.nntxt_codec import Unsupported, f7
from nnconsole.engine.layers.registry import (LayerSpec, ParamSpec, Shape, ShapeError, fmt_shape, norm_axis, prod,
                                              register)
from nnconsole.engine.layers.nnc_values import as_int, resolve

_ZERO = Initializer("Constant", 1.0, 0.0)
_ONE = Initializer("Constant", 1.0, 1.0)
_EPS = ParamSpec("eps", "float", 1e-5, "Added to the variance to avoid division by zero.", min=0.0)


def _channel(type_name: str, x: Shape, p: Mapping[str, Any]) -> int:
    return norm_axis(p["channel_axis"], len(x), f"{type_name} channel_axis")


def _stat_shape(type_name: str):
    def rule(ins: List[Shape], p: Mapping[str, Any]) -> Dict[str, Shape]:
        x = tuple(ins[0])
        c = _channel(type_name, x, p)
        stat = (1,) + tuple(s if i == c else 1 for i, s in enumerate(x))
        return {"beta": stat, "gamma": stat}
    return rule


def _group_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    x = tuple(ins[0])
    c = _channel("GroupNormalization", x, p)
    if x[c] % p["num_groups"]:
        raise ShapeError(f"GroupNormalization num_groups {p['num_groups']} must divide the {x[c]} channels of "
                         f"input {fmt_shape(x)}")
    return x


def _instance_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    _channel("InstanceNormalization", tuple(ins[0]), p)
    return tuple(ins[0])


def _norm_build(fn: str):
    def build(ctx: Any, inputs: list, layer: Any) -> Any:
        import nnabla.parametric_functions as PF  # deferred: nnabla stays out of the GUI
        p, x = dict(ctx.params(layer)), inputs[0]
        channel = p.pop("channel_axis") + 1
        n = x.shape[channel]
        init = {k: ctx.initializer(layer, k, n, n) for k in ("beta", "gamma")}
        return getattr(PF, fn)(x, channel_axis=channel, batch_axis=0, param_init=init, **p)
    return build


def _norm_to_nntxt(f: Any, p: Mapping[str, Any], in_shapes: list, out_shape: Shape, mode: str) -> None:
    q = f.group_normalization_param if f.type == "GroupNormalization" else f.instance_normalization_param
    q.channel_axis, q.eps = int(p["channel_axis"]) + 1, float(p["eps"])
    q.batch_axis.append(0)
    if f.type == "GroupNormalization":
        q.num_groups = int(p["num_groups"])


def _norm_from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> Dict[str, Any]:
    q = f.group_normalization_param if f.type == "GroupNormalization" else f.instance_normalization_param
    if list(q.batch_axis) not in ([], [0]) or q.no_scale or q.no_bias:
        raise Unsupported(f"batch_axis {list(q.batch_axis)} / no_scale / no_bias")
    out: Dict[str, Any] = {"channel_axis": int(q.channel_axis) - 1, "eps": f7(q.eps)}
    if f.type == "GroupNormalization":
        out["num_groups"] = int(q.num_groups)
    return out


def _batch_axis_from_sdcproj(type_name: str):
    def hook(name: str, props: Dict[str, str], params: Dict[str, Any], unsupported: list) -> set:
        value = resolve(props, "BatchAxis")
        if value is not None and as_int(value, -1) != -1:
            unsupported.append(f"layer '{name}' ({type_name}): BatchAxis={value} is not supported; nnconsole "
                               "normalizes each sample on its own (BatchAxis -1)")
        return {"BatchAxis"}
    return hook


for _type, _fn, _shape, _extra, _doc in (
        ("InstanceNormalization", "instance_normalization", _instance_shape, [],
         "Normalises each channel of each sample over its positions, with a learned per-channel scale and shift."),
        ("GroupNormalization", "group_normalization", _group_shape,
         [ParamSpec("num_groups", "int", 4, "Channel groups normalised together.", min=1)],
         "Normalises each group of channels of each sample, with a learned per-channel scale and shift.")):
    register(LayerSpec(
        type=_type, group="Normalization", doc=_doc,
        params=[ParamSpec("channel_axis", "int", 0, "Channel axis without the batch axis.", min=0)] + _extra + [_EPS],
        n_inputs=(1, 1), output_shape=_shape, weight_shapes=_stat_shape(_type),
        macs=lambda ins, out, p: prod(out), build=_norm_build(_fn), weights={"beta": _ZERO, "gamma": _ONE},
        nnc_properties={"ChannelAxis": "channel_axis", "Epsilon": "eps",
                        **({"NumGroups": "num_groups"} if _extra else {})},
        weight_scope=_fn, weight_order=("beta", "gamma"), to_nntxt=_norm_to_nntxt, from_nntxt=_norm_from_nntxt,
        from_sdcproj=_batch_axis_from_sdcproj(_type),
        examples=(({"num_groups": 2} if _extra else {}, ((4, 3, 3),)),)))


# ---------------------------------------------------------------------------- FusedBatchNormalization
def _fused_weights(ins: List[Shape], p: Mapping[str, Any]) -> Dict[str, Shape]:
    x = tuple(ins[0])
    axes = [norm_axis(a, len(x), "FusedBatchNormalization axis") for a in p["axes"]]
    stat = (1,) + tuple(s if i in axes else 1 for i, s in enumerate(x))
    return {"beta": stat, "gamma": stat, "mean": stat, "var": stat}


def _fused_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    _fused_weights(ins, p)
    return tuple(ins[0])


def _fused_build(ctx: Any, inputs: list, layer: Any) -> Any:
    import nnabla.parametric_functions as PF  # deferred: nnabla stays out of the GUI
    p, x = ctx.params(layer), inputs[0]
    axes = [a + 1 for a in p["axes"]]
    n = prod([x.shape[a] for a in axes])
    init = {k: ctx.initializer(layer, k, n, n) for k in ("beta", "gamma")}
    return PF.fused_batch_normalization(x, None, axes=axes,
                                        decay_rate=p["decay_rate"], eps=p["eps"], batch_stat=ctx.batch_stat,
                                        nonlinearity=p["nonlinearity"], param_init=init)


def _fused_to_nntxt(f: Any, p: Mapping[str, Any], in_shapes: list, out_shape: Shape, mode: str) -> None:
    q = f.fused_batch_normalization_param
    q.axes.extend(int(a) + 1 for a in p["axes"])
    q.decay_rate, q.eps, q.nonlinearity = float(p["decay_rate"]), float(p["eps"]), p["nonlinearity"]
    q.batch_stat = mode == "train"


def _fused_from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> Dict[str, Any]:
    q = f.fused_batch_normalization_param
    return {"axes": [int(a) - 1 for a in q.axes] or [0], "decay_rate": f7(q.decay_rate), "eps": f7(q.eps),
            "nonlinearity": q.nonlinearity or "relu"}


register(LayerSpec(
    type="FusedBatchNormalization", group="Normalization",
    doc="BatchNormalization followed by ReLU, in one function.",
    params=[ParamSpec("axes", "ints", (0,), "The one axis kept (without the batch axis); [0] = per channel.", min=0,
                      max_len=1),
            ParamSpec("decay_rate", "float", 0.9, "Decay of the running mean and variance.", min=0.0, max=1.0),
            ParamSpec("eps", "float", 1e-4, "Added to the variance to avoid division by zero.", min=0.0),
            ParamSpec("nonlinearity", "enum", "relu", "Activation after the sum.", choices=("relu",))],
    n_inputs=(1, 1), output_shape=_fused_shape, weight_shapes=_fused_weights,
    macs=lambda ins, out, p: prod(out), build=_fused_build, weights={"beta": _ZERO, "gamma": _ONE},
    non_trainable=("mean", "var"), inference_differs=True,
    nnc_properties={"Axes": "axes", "DecayRate": "decay_rate", "Epsilon": "eps", "Nonlinearity": "nonlinearity"},
    weight_scope="bn", weight_order=("beta", "gamma", "mean", "var"),
    to_nntxt=_fused_to_nntxt, from_nntxt=_fused_from_nntxt,
    examples=(({}, ((3, 4, 4),)),)))
