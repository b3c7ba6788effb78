"""Normalisation layers: BatchNormalization and LayerNormalization.

nnabla parameter names: ``<name>/bn/beta``, ``<name>/bn/gamma`` (learned) and ``<name>/bn/mean``,
``<name>/bn/var`` (running statistics, not learned; the trainer averages them over workers before
validation, checkpoints and export); ``<name>/layer_normalization/beta`` and
``.../gamma``. Parameter shapes include a leading batch axis of size 1, as nnabla stores them.
MACs count one multiply-add per output element (the scale-and-shift).
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping

from nnconsole.engine.project.model import Initializer

from nnconsole.engine.layers.nntxt_codec import Unsupported, axis_from_nnabla, axis_to_nnabla, f7
from nnconsole.engine.layers.registry import LayerSpec, ParamSpec, Shape, ShapeError, fmt_shape, prod, register
from nnconsole.engine.layers.nnc_values import as_int, resolve

_ZERO = Initializer("Constant", 1.0, 0.0)
_ONE = Initializer("Constant", 1.0, 1.0)


def _bn_axes(x: Shape, p: Mapping[str, Any]) -> List[int]:
    axes = list(p["axes"])
    if len(set(axes)) != len(axes):
        raise ShapeError(f"BatchNormalization axes {axes} repeat an axis")
    for a in axes:
        if a >= len(x):
            raise ShapeError(f"BatchNormalization axis {a} is out of range for input {fmt_shape(x)}; "
                             f"axes count without the batch axis, so use 0..{len(x) - 1} (0 = channels)")
    return axes


def _bn_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    _bn_axes(ins[0], p)
    return tuple(ins[0])


def _bn_weights(ins: List[Shape], p: Mapping[str, Any]) -> Dict[str, Shape]:
    x = ins[0]
    axes = _bn_axes(x, p)
    stat = (1,) + tuple(x[i] if i in axes else 1 for i in range(len(x)))
    return {"beta": stat, "gamma": stat, "mean": stat, "var": stat}


def _bn_build(ctx, inputs, layer):
    import nnabla.parametric_functions as PF  # deferred: nnabla stays out of the GUI

    p = ctx.params(layer)
    x = inputs[0]
    axes = [a + 1 for a in p["axes"]]
    n = prod([x.shape[a] for a in axes])
    init = {k: ctx.initializer(layer, k, n, n) for k in ("beta", "gamma")}
    batch_stat = ctx.batch_stat and p["batch_stat"]  # NNC's BatchStat off: running statistics while training too
    if batch_stat:
        from nnconsole.engine.layers.sync_batchnorm import (on_this_worker, registered_workers,
                                                            sync_batch_normalization)

        comm = registered_workers() if p["sync_across_workers"] else None
        # nnabla 1.39's BatchNormalization never updates its running statistics when it keeps several
        # axes (it normalises a transposed copy): ours does, on one worker as on several.
        if comm is not None or len(axes) > 1:
            return sync_batch_normalization(x, axes, p["decay_rate"], p["eps"],
                                            comm.sum_array if comm else on_this_worker, comm.size if comm else 1,
                                            param_init=init)
    return PF.batch_normalization(x, axes=axes, decay_rate=p["decay_rate"], eps=p["eps"],
                                  batch_stat=batch_stat, param_init=init)


def _bn_to_nntxt(f: Any, p: Mapping[str, Any], in_shapes: list, out_shape: Shape, mode: str) -> None:
    q = f.batch_normalization_param
    q.axes.extend(axis_to_nnabla(a) for a in p["axes"])
    q.decay_rate = float(p["decay_rate"])
    q.eps = float(p["eps"])
    q.batch_stat = mode == "train" and bool(p["batch_stat"])


def _bn_from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> Dict[str, Any]:
    p = f.batch_normalization_param
    if p.no_scale or p.no_bias:
        raise Unsupported("no_scale/no_bias")
    out: Dict[str, Any] = {"axes": [axis_from_nnabla(a) for a in p.axes] or [0]}
    if f.HasField("batch_normalization_param"):  # read from the training network: batch_stat false = frozen
        out.update(decay_rate=f7(p.decay_rate), eps=f7(p.eps))
        if not p.batch_stat:
            out["batch_stat"] = False
    return out


register(LayerSpec(
    type="BatchNormalization", group="Normalization",
    doc="Normalises each channel with batch statistics while training and running averages otherwise.",
    params=[
        ParamSpec("axes", "ints", (0,), "Axes kept (without the batch axis); [0] = per channel.", min=0),
        ParamSpec("decay_rate", "float", 0.9, "Decay of the running mean and variance.", min=0.0, max=1.0),
        ParamSpec("eps", "float", 1e-5, "Added to the variance to avoid division by zero.", min=0.0),
        ParamSpec("sync_across_workers", "bool", False,
                  "With several workers, compute the batch statistics over all workers' samples (synchronized "
                  "BatchNormalization: for small per-worker batches, e.g. keep-logical-batch); one worker: no effect."),
        ParamSpec("batch_stat", "bool", True,
                  "Normalise with batch statistics while training (NNC's BatchStat); off: the running statistics "
                  "are used and kept while training too (a frozen BatchNormalization, e.g. for fine-tuning). "
                  "Validation, evaluation and runtime networks always use the running statistics."),
    ],
    n_inputs=(1, 1),
    output_shape=_bn_shape,
    weight_shapes=_bn_weights,
    macs=lambda ins, out, p: prod(out),
    build=_bn_build,
    weights={"beta": _ZERO, "gamma": _ONE},
    non_trainable=("mean", "var"),
    inference_differs=True,
    nnc_properties={"Axes": "axes", "DecayRate": "decay_rate", "Epsilon": "eps", "BatchStat": "batch_stat"},
    weight_scope="bn", weight_order=("beta", "gamma", "mean", "var"),
    to_nntxt=_bn_to_nntxt, from_nntxt=_bn_from_nntxt,
))


def _ln_build(ctx, inputs, layer):
    import nnabla.parametric_functions as PF  # deferred: nnabla stays out of the GUI

    p = ctx.params(layer)
    x = inputs[0]
    n = prod(x.shape[1:])
    init = {k: ctx.initializer(layer, k, n, n) for k in ("beta", "gamma")}
    return PF.layer_normalization(x, batch_axis=0, eps=p["eps"], param_init=init)


def _ln_to_nntxt(f: Any, p: Mapping[str, Any], in_shapes: list, out_shape: Shape, mode: str) -> None:
    f.layer_normalization_param.batch_axis.append(0)
    f.layer_normalization_param.eps = float(p["eps"])


def _ln_from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> Dict[str, Any]:
    p = f.layer_normalization_param
    if list(p.batch_axis) not in ([], [0]) or p.no_scale or p.no_bias:
        raise Unsupported(f"batch_axis {list(p.batch_axis)} / no_scale / no_bias")
    return {"eps": f7(p.eps)} if f.HasField("layer_normalization_param") else {}


def _ln_from_sdcproj(name: str, props: Dict[str, str], params: Dict[str, Any], unsupported: list) -> set:
    """NNC's BatchAxis counts without the batch axis: its default -1 is nnabla's batch_axis 0, the only
    one nnconsole's LayerNormalization has."""

    value = resolve(props, "BatchAxis")
    if value is not None and as_int(value, -1) != -1:
        unsupported.append(f"layer '{name}' (LayerNormalization): BatchAxis={value} is not supported; nnconsole "
                           "normalizes each sample over all its elements (BatchAxis -1)")
    return {"BatchAxis"}


register(LayerSpec(
    type="LayerNormalization", group="Normalization",
    doc="Normalises each sample over all its elements, with a learned per-element scale and shift.",
    params=[ParamSpec("eps", "float", 1e-5, "Added to the variance to avoid division by zero.", min=0.0)],
    n_inputs=(1, 1),
    output_shape=lambda ins, p: tuple(ins[0]),
    weight_shapes=lambda ins, p: {"beta": (1,) + tuple(ins[0]), "gamma": (1,) + tuple(ins[0])},
    macs=lambda ins, out, p: prod(out),
    build=_ln_build,
    weights={"beta": _ZERO, "gamma": _ONE},
    nnc_properties={"Epsilon": "eps"},
    weight_scope="layer_normalization", weight_order=("beta", "gamma"),
    to_nntxt=_ln_to_nntxt, from_nntxt=_ln_from_nntxt, from_sdcproj=_ln_from_sdcproj,
))
