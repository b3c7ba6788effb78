"""NNC's recurrent loop control: RecurrentInput, RecurrentOutput and Delay (palette category LoopControl).

A recurrent block is the part of the network between RecurrentInput layers (each cuts its input into time
steps along ``axis``) and RecurrentOutput layers (each stacks the per-step values back along ``axis``); a
Delay gives the previous step's value of its first input (its initial value at the first step). The network
is unrolled over time before it is checked or built, exactly as nnabla's loader expands an .nntxt
(``nnconsole.engine.recurrent_unroll``), so these registrations hold only the properties, the NNC names and
the rules that make sense for one layer on its own; the layers of a block share their weights over time.
"""
from __future__ import annotations

from typing import Any, List, Mapping

from .registry import LayerSpec, ParamSpec, Shape, ShapeError, fmt_shape, norm_axis, register

DELAY_GENERATORS = ("None", "Normal", "Uniform", "Constant")


def step_shape(shape: Shape, axis: int, who: str = "RecurrentInput") -> Shape:
    """One time step of ``shape``: the shape without the time axis."""
    if len(shape) < 2:
        raise ShapeError(f"{who} needs an input with a time axis and at least one more axis, got "
                         f"{fmt_shape(shape)}; give it a sequence such as (time, features)")
    a = norm_axis(axis, len(shape), "time axis")
    return tuple(shape[:a]) + tuple(shape[a + 1:])


def _recurrent_input_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    return step_shape(tuple(ins[0]), int(p["axis"]))


def _recurrent_output_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    raise ShapeError("RecurrentOutput must close a recurrent block: connect it to a layer fed (directly or "
                     "through other layers) by a RecurrentInput")


def delay_size(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    """The Delay's shape: ``size``, or its first input's shape when empty; they must agree."""
    size = tuple(int(s) for s in p["size"]) or tuple(ins[0])
    if ins and tuple(ins[0]) != size:
        raise ShapeError(f"Delay size {fmt_shape(size)} differs from its input {fmt_shape(ins[0])}; the value "
                         "delayed by one step keeps its shape (leave size empty to use the input's)")
    if len(ins) > 1 and tuple(ins[1]) != size:
        raise ShapeError(f"Delay's initial value has shape {fmt_shape(ins[1])} but the delayed value has "
                         f"{fmt_shape(size)}; give it an initial value of that shape")
    return size


def _computed_by_nnc(name: str, props: Mapping[str, str], params: dict, unsupported: list) -> set:
    """NNC computes a block's ID (RecurrentGroupID) and RecurrentOutput's Length: blocks pair through the graph
    and the length comes from the RecurrentInput's input (nnconsole.engine.recurrent_unroll)."""
    return {"ID", "RecurrentGroupID", "Length"}


register(LayerSpec(
    type="RecurrentInput", group="LoopControl",
    doc="Opens a recurrent block: cuts its input into time steps along axis (not counting the batch axis); "
        "the block's layers run once per step, sharing their weights.",
    params=[ParamSpec("axis", "int", 0, "The time axis, without the batch axis (NNC's Axis).", min=0)],
    n_inputs=(1, 1), output_shape=_recurrent_input_shape, loop_control=True,
    nnc_properties={"Axis": "axis"}, from_sdcproj=_computed_by_nnc, caption=lambda p: f"axis {p.get('axis', 0)}",
))

register(LayerSpec(
    type="RecurrentOutput", group="LoopControl",
    doc="Closes a recurrent block: stacks the value of its input at every time step along axis (not counting "
        "the batch axis).",
    params=[ParamSpec("axis", "int", 0, "The axis the steps are stacked on, without the batch axis.", min=0)],
    n_inputs=(1, 1), output_shape=_recurrent_output_shape, loop_control=True,
    nnc_properties={"Axis": "axis"}, from_sdcproj=_computed_by_nnc, caption=lambda p: f"axis {p.get('axis', 0)}",
))

register(LayerSpec(
    type="Delay", group="LoopControl",
    doc="Inside a recurrent block, the value its first input had at the previous time step; at the first step "
        "its second input (Initial), or when unconnected the initial value its generator gives.",
    params=[
        ParamSpec("size", "ints", (), "Shape of the delayed value; empty means its input's shape.", min=1,
                  min_len=0),
        ParamSpec("initial_generator", "enum", "Constant", "Where the first step's value comes from when the "
                  "Initial input is not connected: Constant (initial_multiplier everywhere) or None (the "
                  "dataset variable initial_dataset).", choices=DELAY_GENERATORS),
        ParamSpec("initial_multiplier", "float", 0.0, "The Constant generator's value."),
        ParamSpec("initial_dataset", "str", "c", "The dataset variable read when the generator is None."),
    ],
    n_inputs=(1, 2), output_shape=delay_size, loop_control=True, input_names=("value", "initial"),
    nnc_properties={"Size": "size", "Initial.Generator": "initial_generator",
                    "Initial.GeneratorMultiplier": "initial_multiplier", "Initial.Dataset": "initial_dataset"},
    from_sdcproj=_computed_by_nnc, caption=lambda p: "",
))
