"""Structural layers: Dropout, Reshape, Flatten, Concatenate and Slice."""
from __future__ import annotations

from typing import Any, List, Mapping, Tuple

from nnconsole.engine.layers.captions import fmt_dims, fmt_value
from nnconsole.engine.layers.nntxt_codec import Unsupported, axis_from_nnabla, axis_to_nnabla, set_shape
from nnconsole.engine.layers.registry import (LayerSpec, ParamSpec, Shape, ShapeError, fmt_shape, norm_axis, prod,
                                              register)

# ----------------------------------------------------------------------------------- Dropout


def _dropout_active(ctx, p: Mapping[str, Any]) -> bool:
    """Dropout drops while training, and at validation/evaluation/runtime too when SkipAtTest is off."""
    return ctx.training or not p["skip_at_test"]


def _dropout_build(ctx, inputs, layer):
    import nnabla.functions as F  # deferred: nnabla stays out of the GUI
    p = ctx.params(layer)
    if _dropout_active(ctx, p):
        return F.dropout(inputs[0], p=p["p"], seed=ctx.random_seed(layer, p["seed"]))
    return F.identity(inputs[0])  # validation / runtime with SkipAtTest: dropout is off


def _dropout_to_nntxt(f: Any, p: Mapping[str, Any], in_shapes: list, out_shape: Shape, mode: str) -> None:
    """With SkipAtTest (NNC's default) Dropout is an Identity in the validation and runtime networks, as NNC
    writes them; without it every network keeps the Dropout."""
    if mode != "train" and p["skip_at_test"]:
        f.type = "Identity"
        return
    f.dropout_param.p = float(p["p"])
    f.dropout_param.seed = int(p["seed"])


register(LayerSpec(
    type="Dropout", group="Other",
    doc="While training, zeroes each element with probability p and scales the rest by 1/(1-p); at test time "
        "too when skip_at_test is off.",
    params=[ParamSpec("p", "float", 0.5, "Probability of dropping an element.", min=0.0, max=1.0,
                      exclusive_max=True),
            ParamSpec("seed", "int", -1, "Random seed of the dropout mask; -1 follows the run's seed (each "
                      "worker draws its own masks).", min=-1),
            ParamSpec("skip_at_test", "bool", True, "Identity at validation, evaluation and in exported runtime "
                      "networks (NNC's SkipAtTest); off: dropout stays active there too.")],
    n_inputs=(1, 1), output_shape=lambda ins, p: tuple(ins[0]), build=_dropout_build,
    inference_differs=True, caption=lambda p: f"p {fmt_value(p.get('p', 0.5))}" + ("" if p.get("skip_at_test", True) in (True, "True")
                                                                                      else " · also at test"),
    nnc_properties={"P": "p", "Seed": "seed", "SkipAtTest": "skip_at_test"},
    nntxt_fields={"p": "dropout_param.p", "seed": "dropout_param.seed"}, to_nntxt=_dropout_to_nntxt,
))

# ----------------------------------------------------------------------------------- Reshape


def _reshape_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    x, want = tuple(ins[0]), list(p["shape"])
    if 0 in want or want.count(-1) > 1:
        raise ShapeError(f"Reshape shape {want} may contain positive sizes and at most one -1 (inferred size)")
    total = prod(x)
    if -1 in want:
        known = prod([s for s in want if s != -1])
        if total % known:
            raise ShapeError(f"Reshape cannot turn {fmt_shape(x)} ({total} elements) into {want}: "
                             f"{total} is not divisible by {known}")
        want[want.index(-1)] = total // known
    if prod(want) != total:
        raise ShapeError(f"Reshape cannot turn {fmt_shape(x)} ({total} elements) into {fmt_shape(want)} "
                         f"({prod(want)} elements); the element counts must match")
    return tuple(want)


def _reshape_build(ctx, inputs, layer):
    import nnabla.functions as F  # deferred: nnabla stays out of the GUI
    x = inputs[0]
    shape = _reshape_shape([x.shape[1:]], ctx.params(layer))
    return F.reshape(x, (x.shape[0],) + shape, inplace=False)


def _reshape_to_nntxt(f: Any, p: Mapping[str, Any], in_shapes: list, out_shape: Shape, mode: str) -> None:
    set_shape(f.reshape_param.shape, [-1] + list(out_shape))


def _reshape_from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> dict:
    shape = [int(d) for d in f.reshape_param.shape.dim]
    return {"shape": shape[1:] if len(shape) > 1 else shape}


register(LayerSpec(
    type="Reshape", group="Other",
    doc="Changes the shape of each sample without changing its elements.",
    params=[ParamSpec("shape", "ints", (-1,), "New shape without the batch axis; one -1 is inferred.",
                      min=-1, example=(16, 7, 7))],
    n_inputs=(1, 1), output_shape=_reshape_shape, build=_reshape_build,
    nnc_properties={"OutShape": "shape"}, to_nntxt=_reshape_to_nntxt, from_nntxt=_reshape_from_nntxt,
    caption=lambda p: f"to {fmt_dims(p.get('shape', ()))}",
))


def _flatten_build(ctx, inputs, layer):
    import nnabla.functions as F  # deferred: nnabla stays out of the GUI
    x = inputs[0]
    return F.reshape(x, (x.shape[0], prod(x.shape[1:])), inplace=False)


register(LayerSpec(
    type="Flatten", group="Other", doc="Flattens each sample into a vector.",
    params=[], n_inputs=(1, 1), output_shape=lambda ins, p: (prod(ins[0]),), build=_flatten_build,
    export_as="Reshape", to_nntxt=_reshape_to_nntxt,
))

# ------------------------------------------------------------------------------- Concatenate


def _concat_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    first = tuple(ins[0])
    axis = norm_axis(p["axis"], len(first))
    total = 0
    for s in ins:
        s = tuple(s)
        if len(s) != len(first) or any(a != b for i, (a, b) in enumerate(zip(s, first)) if i != axis):
            raise ShapeError(f"Concatenate inputs must have equal shapes except along axis {axis}, got "
                             f"{', '.join(fmt_shape(t) for t in ins)}")
        total += s[axis]
    return first[:axis] + (total,) + first[axis + 1:]


def _concat_build(ctx, inputs, layer):
    import nnabla.functions as F  # deferred: nnabla stays out of the GUI
    axis = norm_axis(ctx.params(layer)["axis"], len(inputs[0].shape) - 1) + 1
    return F.concatenate(*inputs, axis=axis)


def _concat_to_nntxt(f: Any, p: Mapping[str, Any], in_shapes: list, out_shape: Shape, mode: str) -> None:
    f.concatenate_param.axis = axis_to_nnabla(p["axis"])


def _concat_from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> dict:
    return {"axis": axis_from_nnabla(f.concatenate_param.axis)}


register(LayerSpec(
    type="Concatenate", group="Other",
    doc="Joins two or more inputs along an axis (0 = channels).",
    params=[ParamSpec("axis", "int", 0, "Axis without the batch axis; 0 = channels, -1 = last.")],
    n_inputs=(2, None), output_shape=_concat_shape, build=_concat_build, caption_always=True,
    nnc_properties={"Axis": "axis"}, to_nntxt=_concat_to_nntxt, from_nntxt=_concat_from_nntxt,
))

# ------------------------------------------------------------------------------------- Slice


def _slice_ranges(x: Shape, p: Mapping[str, Any]) -> Tuple[list, list, list]:
    start, stop, step = list(p["start"]), list(p["stop"]), list(p["step"])
    n = len(x)
    for name, values in (("start", start), ("stop", stop), ("step", step)):
        if len(values) > n:
            raise ShapeError(f"Slice {name} {values} has {len(values)} entries but the input {fmt_shape(x)} "
                             f"has only {n} dimensions")
    start += [0] * (n - len(start))
    stop += list(x[len(stop):])
    step += [1] * (n - len(step))
    for i, (a, b, s) in enumerate(zip(start, stop, step)):
        if not 0 <= a < b <= x[i]:
            raise ShapeError(f"Slice on axis {i} needs 0 <= start < stop <= {x[i]} for input {fmt_shape(x)}, "
                             f"got start {a}, stop {b}")
    return start, stop, step


def _slice_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    start, stop, step = _slice_ranges(tuple(ins[0]), p)
    return tuple((b - a + s - 1) // s for a, b, s in zip(start, stop, step))


def _slice_build(ctx, inputs, layer):
    import nnabla.functions as F  # deferred: nnabla stays out of the GUI
    x = inputs[0]
    start, stop, step = _slice_ranges(tuple(x.shape[1:]), ctx.params(layer))
    # Only the non-batch axes: nnabla applies shorter lists to the trailing axes, so an exported
    # .nnp with variable batch size slices correctly at any batch size.
    return F.slice(x, start, stop, step)


def _slice_to_nntxt(f: Any, p: Mapping[str, Any], in_shapes: list, out_shape: Shape, mode: str) -> None:
    start, stop, step = _slice_ranges(tuple(in_shapes[0]), p)
    f.slice_param.start.extend(start)
    f.slice_param.stop.extend(stop)
    f.slice_param.step.extend(step)


def _slice_from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> dict:
    """nnabla's lists may include the batch axis, or cover only the trailing axes."""
    x = in_shapes[0] if in_shapes else None
    p = f.slice_param
    start, stop, step = list(p.start), list(p.stop), list(p.step)
    ndim = len(x) + 1 if x is not None else max(len(start), len(stop))
    if len(start) >= ndim:  # the batch axis is included
        if start[0] != 0 or (step and step[0] != 1):
            raise Unsupported("slicing the batch axis")
        start, stop, step = start[1:], stop[1:], step[1:]
    elif x is not None and len(start) < len(x):  # nnabla applies short lists to the trailing axes
        lead = len(x) - len(start)
        start = [0] * lead + start
        stop = list(x[:lead]) + stop
        step = [1] * lead + (step or [1] * (len(x) - lead))
    return {"start": start, "stop": stop, "step": step}


def _slice_from_sdcproj(name: str, props: dict, params: dict, unsupported: list) -> set:
    """NNC's default Stop is '*Input' (the whole axis): the registry's empty stop says the same."""
    return {"Stop"} if (props.get("Stop") or "").strip() == "*Input" else set()


register(LayerSpec(
    type="Slice", group="Other",
    doc="Keeps start:stop:step of each axis; missing entries keep the whole axis.",
    params=[
        ParamSpec("start", "ints", (), "First index per axis (without the batch axis).", min=0, min_len=0,
                  example=(0, 2, 2)),
        ParamSpec("stop", "ints", (), "End index (exclusive) per axis; missing = to the end.", min=1,
                  min_len=0, example=(1, 26, 26)),
        ParamSpec("step", "ints", (), "Step per axis; missing = 1.", min=1, min_len=0, example=(1, 1, 1)),
    ],
    n_inputs=(1, 1), output_shape=_slice_shape, build=_slice_build,
    nnc_properties={"Start": "start", "Stop": "stop", "Step": "step"},
    to_nntxt=_slice_to_nntxt, from_nntxt=_slice_from_nntxt, from_sdcproj=_slice_from_sdcproj,
))
