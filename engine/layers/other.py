"""Structural layers: Dropout, Reshape, Flatten, Concatenate and Slice."""
from __future__ import annotations

from typing import Any, List, Mapping, Tuple

from .registry import LayerSpec, ParamSpec, Shape, ShapeError, fmt_shape, norm_axis, prod, register

# ----------------------------------------------------------------------------------- Dropout


def _dropout_build(ctx, inputs, layer):
    import nnabla.functions as F
    if ctx.training:
        return F.dropout(inputs[0], p=ctx.params(layer)["p"])
    return F.identity(inputs[0])  # validation / runtime: dropout is off


register(LayerSpec(
    type="Dropout", group="Other",
    doc="While training, zeroes each element with probability p and scales the rest by 1/(1-p).",
    params=[ParamSpec("p", "float", 0.5, "Probability of dropping an element.", min=0.0, max=1.0,
                      exclusive_max=True)],
    n_inputs=(1, 1), output_shape=lambda ins, p: tuple(ins[0]), build=_dropout_build,
    inference_differs=True,
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
    import nnabla.functions as F
    x = inputs[0]
    shape = _reshape_shape([x.shape[1:]], ctx.params(layer))
    return F.reshape(x, (x.shape[0],) + shape, inplace=False)


register(LayerSpec(
    type="Reshape", group="Other",
    doc="Changes the shape of each sample without changing its elements.",
    params=[ParamSpec("shape", "ints", (-1,), "New shape without the batch axis; one -1 is inferred.",
                      min=-1, example=(16, 7, 7))],
    n_inputs=(1, 1), output_shape=_reshape_shape, build=_reshape_build,
))


def _flatten_build(ctx, inputs, layer):
    import nnabla.functions as F
    x = inputs[0]
    return F.reshape(x, (x.shape[0], prod(x.shape[1:])), inplace=False)


register(LayerSpec(
    type="Flatten", group="Other", doc="Flattens each sample into a vector.",
    params=[], n_inputs=(1, 1), output_shape=lambda ins, p: (prod(ins[0]),), build=_flatten_build,
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
    import nnabla.functions as F
    axis = norm_axis(ctx.params(layer)["axis"], len(inputs[0].shape) - 1) + 1
    return F.concatenate(*inputs, axis=axis)


register(LayerSpec(
    type="Concatenate", group="Other",
    doc="Joins two or more inputs along an axis (0 = channels).",
    params=[ParamSpec("axis", "int", 0, "Axis without the batch axis; 0 = channels, -1 = last.")],
    n_inputs=(2, None), output_shape=_concat_shape, build=_concat_build,
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
    import nnabla.functions as F
    x = inputs[0]
    start, stop, step = _slice_ranges(tuple(x.shape[1:]), ctx.params(layer))
    # Only the non-batch axes: nnabla applies shorter lists to the trailing axes, so an exported
    # .nnp with variable batch size slices correctly at any batch size.
    return F.slice(x, start, stop, step)


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
))
