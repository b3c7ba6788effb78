"""NNC's Others category, the layers that rearrange elements: Broadcast, Tile, Pad, Flip, Shift,
Transpose, Stack, MatrixDiag, MatrixDiagPart, Interpolate and Sort.

Axes in the parameters exclude the batch axis, as in NNC's property sheet; ``build`` and the .nntxt
hooks add it. Lists that nnabla applies to the trailing axes (Tile's reps, Pad's widths, Shift's
shifts, Interpolate's output size) are stored as given.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping

from nnconsole.engine.layers.captions import fmt_dims
from nnconsole.engine.layers.factory import function_layer
from nnconsole.engine.layers.nntxt_codec import axis_from_nnabla, read_fields, Unsupported
from nnconsole.engine.layers.registry import ParamSpec, Shape, ShapeError, fmt_shape, norm_axis

_GROUP = "Other"


def _with_batch_axes(fn: str, axis_params: tuple = ("axes",)) -> Any:
    """A build calling F.<fn> with axis parameters counted with the batch axis."""
    def build(ctx: Any, inputs: list, layer: Any) -> Any:
        import nnabla.functions as F  # deferred: nnabla stays out of the GUI

        p = dict(ctx.params(layer))
        ndim = len(inputs[0].shape) - 1
        for name in axis_params:
            value = p[name]
            if isinstance(value, (list, tuple)):
                p[name] = [norm_axis(a, ndim) + 1 for a in value]
            else:
                p[name] = norm_axis(value, ndim + (1 if fn == "stack" else 0)) + 1
        return getattr(F, fn)(*inputs, **p)
    return build


# ------------------------------------------------------------------------------------- Broadcast
def _broadcast_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    x, want = tuple(ins[0]), tuple(p["shape"]) or tuple(ins[0])
    if len(want) != len(x) or any(a != b and a != 1 for a, b in zip(x, want)):
        raise ShapeError(f"Broadcast cannot stretch {fmt_shape(x)} to {fmt_shape(want)}: give one size per axis; "
                         "only axes of size 1 can grow")
    return want


def _broadcast_build(ctx: Any, inputs: list, layer: Any) -> Any:
    import nnabla.functions as F  # deferred: nnabla stays out of the GUI
    x = inputs[0]
    return F.broadcast(x, (x.shape[0],) + _broadcast_shape([x.shape[1:]], ctx.params(layer)))


def _broadcast_to_nntxt(f: Any, p: Mapping[str, Any], in_shapes: list, out_shape: Shape, mode: str) -> None:
    """nnabla's Broadcast needs the batch size in its shape; a Tile of the grown axes is the same
    function at any batch size."""
    f.tile_param.reps.extend(int(o) // int(i) for o, i in zip(out_shape, in_shapes[0]))


def _broadcast_from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> Dict[str, Any]:
    """nnabla's (NNC's) Broadcast: the shape starts with the batch size; nnconsole's Tile form is read as Tile."""
    shape = [int(d) for d in f.broadcast_param.shape.dim]
    if len(shape) < 2:
        raise Unsupported(f"shape {shape} (no sample axes)")
    return {"shape": shape[1:]}


def _broadcast_from_sdcproj(name: str, props: dict, params: dict, unsupported: list) -> set:
    """NNC's default OutShape is '*Input' (no change): the registry's empty shape says the same."""
    return {"OutShape"} if (props.get("OutShape") or "").strip() == "*Input" else set()


function_layer("Broadcast", _GROUP, "broadcast", "Repeats axes of size 1 to reach the given shape.",
               [ParamSpec("shape", "ints", (), "Output shape without the batch axis; empty keeps the input's.",
                          min=1, min_len=0, example=(3, 4, 4))],
               output_shape=_broadcast_shape, build=_broadcast_build, nnabla_function="", export_as="Tile",
               nnc_properties={"OutShape": "shape"}, nntxt_fields={}, to_nntxt=_broadcast_to_nntxt,
               from_nntxt=_broadcast_from_nntxt,
               from_sdcproj=_broadcast_from_sdcproj, caption=lambda p: f"to {fmt_dims(p.get('shape', ()))}",
               examples=(({"shape": [3, 4, 5]}, ((3, 1, 5),)),))


# ------------------------------------------------------------------------------------------ Tile
def _tile_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    x, reps = tuple(ins[0]), tuple(p["reps"])
    if len(reps) > len(x):
        raise ShapeError(f"Tile reps {list(reps)} has more entries than the input {fmt_shape(x)} has axes")
    lead = len(x) - len(reps)
    return x[:lead] + tuple(s * r for s, r in zip(x[lead:], reps))


function_layer("Tile", _GROUP, "tile", "Repeats the input reps times along each trailing axis.",
               [ParamSpec("reps", "ints", (2,), "Repetitions per trailing axis.", min=1)],
               output_shape=_tile_shape, caption_always=True)


# ------------------------------------------------------------------------------------------- Pad
def _pad_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    x, width = tuple(ins[0]), tuple(p["pad_width"])
    if len(width) % 2 or len(width) > 2 * len(x):
        raise ShapeError(f"Pad pad_width {list(width)} must give (before, after) pairs for at most the input's "
                         f"{len(x)} axes (input {fmt_shape(x)})")
    lead = len(x) - len(width) // 2
    out = list(x)
    for i in range(len(width) // 2):
        out[lead + i] += width[2 * i] + width[2 * i + 1]
        if p["mode"] == "reflect" and max(width[2 * i], width[2 * i + 1]) >= x[lead + i]:
            raise ShapeError(f"Pad reflect width {list(width)} must be smaller than the axes it pads "
                             f"(input {fmt_shape(x)})")
    return tuple(out)


function_layer("Pad", _GROUP, "pad", "Pads the trailing axes: (before, after) pairs per axis.",
               [ParamSpec("pad_width", "ints", (0, 0, 0, 0), "(before, after) per trailing axis.", min=0),
                ParamSpec("mode", "enum", "constant", "Fill: a constant, a mirror image or the edge value.",
                          choices=("constant", "reflect", "repeat")),
                ParamSpec("constant_value", "float", 0.0, "Fill value in constant mode.")],
               output_shape=_pad_shape, examples=(({"pad_width": [1, 1, 2, 0]}, ((2, 4, 4),)),
                                                  ({"pad_width": [1, 2], "mode": "reflect"}, ((3, 4),))))


# ------------------------------------------------------------------------------------------ Flip
def _axes_shape(type_name: str):
    def rule(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
        for a in p["axes"]:
            norm_axis(a, len(ins[0]), f"{type_name} axis")
        return tuple(ins[0])
    return rule


function_layer("Flip", _GROUP, "flip", "Reverses the order of elements along the given axes.",
               [ParamSpec("axes", "ints", (0,), "Axes to reverse, without the batch axis.", min=-8)],
               output_shape=_axes_shape("Flip"), build=_with_batch_axes("flip"), nnabla_function="",
               caption_always=True, examples=(({"axes": [0, 2]}, ((2, 3, 4),)),))


# ----------------------------------------------------------------------------------------- Shift
def _shift_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    if len(p["shifts"]) > len(ins[0]):
        raise ShapeError(f"Shift shifts {list(p['shifts'])} has more entries than the input {fmt_shape(ins[0])} "
                         "has axes")
    return tuple(ins[0])


function_layer("Shift", _GROUP, "shift", "Shifts the trailing axes by whole elements (the border fills in).",
               [ParamSpec("shifts", "ints", (0, 0), "Shift per trailing axis.", min_len=0),
                ParamSpec("border_mode", "enum", "nearest", "Fill with the nearest value or a mirror image.",
                          choices=("nearest", "reflect"))],
               output_shape=_shift_shape, nnc_properties={"Shift": "shifts", "BorderMode": "border_mode"},
               examples=(({"shifts": [1, -1]}, ((2, 4, 4),)),))


# ------------------------------------------------------------------------------------- Transpose
def _transpose_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    x, axes = tuple(ins[0]), list(p["axes"])
    if sorted(axes) != list(range(len(x))):
        raise ShapeError(f"Transpose axes {axes} must be an order of 0..{len(x) - 1} for input {fmt_shape(x)}")
    return tuple(x[a] for a in axes)


def _transpose_build(ctx: Any, inputs: list, layer: Any) -> Any:
    import nnabla.functions as F  # deferred: nnabla stays out of the GUI
    return F.transpose(inputs[0], [0] + [a + 1 for a in ctx.params(layer)["axes"]])


def _transpose_to_nntxt(f: Any, p: Mapping[str, Any], in_shapes: list, out_shape: Shape, mode: str) -> None:
    f.transpose_param.axes.extend([0] + [int(a) + 1 for a in p["axes"]])


def _transpose_from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> Dict[str, Any]:
    axes = [int(a) for a in f.transpose_param.axes]
    if not axes or axes[0] != 0:
        raise Unsupported(f"axes {axes} move the batch axis")
    return {"axes": [axis_from_nnabla(a) for a in axes[1:]]}


function_layer("Transpose", _GROUP, "transpose", "Reorders the axes (without the batch axis).",
               [ParamSpec("axes", "ints", (0, 1, 2), "New order of the axes, e.g. [1, 2, 0].", min=0)],
               output_shape=_transpose_shape, build=_transpose_build, nnabla_function="", nntxt_fields={},
               to_nntxt=_transpose_to_nntxt, from_nntxt=_transpose_from_nntxt, caption_always=True,
               examples=(({"axes": [1, 2, 0]}, ((2, 3, 4),)), ({"axes": [1, 0]}, ((3, 4),))))


# ----------------------------------------------------------------------------------------- Stack
def _stack_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    first = tuple(ins[0])
    if any(tuple(s) != first for s in ins):
        raise ShapeError(f"Stack inputs must have equal shapes, got {', '.join(fmt_shape(s) for s in ins)}")
    axis = norm_axis(p["axis"], len(first) + 1, "Stack axis")
    return first[:axis] + (len(ins),) + first[axis:]


function_layer("Stack", _GROUP, "stack", "Joins inputs of one shape along a new axis.",
               [ParamSpec("axis", "int", 0, "Position of the new axis, without the batch axis.")],
               n_inputs=(1, None), output_shape=_stack_shape, build=_with_batch_axes("stack", ("axis",)),
               nnabla_function="", examples=(({}, ((3, 4), (3, 4))), ({"axis": 2}, ((3, 4), (3, 4), (3, 4)))))


# ------------------------------------------------------------------------------- MatrixDiag(Part)
def _diag_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    return tuple(ins[0]) + (ins[0][-1],)


def _diag_part_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    x = tuple(ins[0])
    if len(x) < 2 or x[-1] != x[-2]:
        raise ShapeError(f"MatrixDiagPart needs square matrices in the last two axes, got {fmt_shape(x)}")
    return x[:-1]


function_layer("MatrixDiag", _GROUP, "matrix_diag", "Turns the last axis into diagonal matrices.",
               output_shape=_diag_shape)
function_layer("MatrixDiagPart", _GROUP, "matrix_diag_part", "The diagonals of the square matrices in the last "
               "two axes.", output_shape=_diag_part_shape, examples=(({}, ((2, 3, 3),)),))


# ----------------------------------------------------------------------------------- Interpolate
def _interpolate_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    x, size = tuple(ins[0]), tuple(p["output_size"])
    if len(size) >= len(x) or (p["mode"] == "linear" and len(size) > 3):
        raise ShapeError(f"Interpolate output_size {list(size)} needs an input with more axes (channels first), "
                         f"got {fmt_shape(x)}")
    return x[:len(x) - len(size)] + size


def _interpolate_from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> Dict[str, Any]:
    q = f.interpolate_param
    if q.half_pixel or q.half_pixel_for_nn or q.channel_last:
        raise Unsupported("half_pixel / half_pixel_for_nn / channel_last")
    return read_fields(f, {"output_size": "interpolate_param.output_size", "mode": "interpolate_param.mode",
                           "align_corners": "interpolate_param.align_corners"})


function_layer("Interpolate", _GROUP, "interpolate", "Resizes the trailing axes (linear or nearest).",
               [ParamSpec("output_size", "ints", (32, 32), "Size of each trailing axis.", min=1, max_len=3),
                ParamSpec("mode", "enum", "linear", "Interpolation.", choices=("linear", "nearest")),
                ParamSpec("align_corners", "bool", True, "Keep the corner values in place.")],
               output_shape=_interpolate_shape, from_nntxt=_interpolate_from_nntxt, caption=lambda p: f"to {fmt_dims(p.get('output_size', ()))}",
               examples=(({"output_size": [6, 5]}, ((2, 3, 4),)), ({"output_size": [8], "mode": "nearest"},
                                                                    ((2, 4),))))


# ------------------------------------------------------------------------------------------ Sort
def _sort_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    norm_axis(p["axis"], len(ins[0]), "Sort axis")
    return tuple(ins[0])


def _sort_from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> Dict[str, Any]:
    if f.sort_param.with_index:
        raise Unsupported("with_index (two outputs: nnconsole's Sort has one)")
    return read_fields(f, {"axis": "sort_param.axis", "reverse": "sort_param.reverse",
                           "only_index": "sort_param.only_index"})


function_layer("Sort", _GROUP, "sort", "Sorts the elements along an axis (or gives their sorted indices).",
               [ParamSpec("axis", "int", 0, "Axis without the batch axis; -1 = last."),
                ParamSpec("reverse", "bool", False, "Largest first."),
                ParamSpec("only_index", "bool", False, "Output the indices instead of the values.")],
               output_shape=_sort_shape, build=_with_batch_axes("sort", ("axis",)), nnabla_function="",
               from_nntxt=_sort_from_nntxt,
               examples=(({"axis": -1, "reverse": True}, ((3, 4),)),))
