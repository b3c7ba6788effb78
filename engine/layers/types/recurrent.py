"""NNC's recurrent loop control: RecurrentInput, RecurrentOutput and Delay (palette category LoopControl).

A recurrent block is the part of the network between RecurrentInput layers (each cuts its input into time
steps along ``axis``) and RecurrentOutput layers (each stacks the per-step values back along ``axis``); a
Delay gives the previous step's value of its first input (its initial value at the first step). The network
is unrolled over time before it is checked or built, exactly as nnabla's loader expands an .nntxt
(``nnconsole.engine.network.recurrent_unroll``), so these registrations hold only the properties, the NNC names and
the rules that make sense for one layer on its own; the layers of a block share their weights over time.
"""
from __future__ import annotations

from typing import Any, List, Mapping

from nnconsole.engine.layers.registry import LayerSpec, ParamSpec, Shape, ShapeError, fmt_shape, norm_axis, register
from nnconsole.engine.layers.nntxt_codec import Unsupported

DELAY_GENERATORS = ("None", "Normal", "Uniform", "Constant")
LSTM_INITIAL_GENERATORS = ("Constant", "Normal", "Uniform")  # the LSTM unit's initial states (None: not supported)


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
    and the length comes from the RecurrentInput's input (nnconsole.engine.network.recurrent_unroll)."""
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
                  "Initial input is not connected: Constant (initial_multiplier everywhere), Normal or Uniform "
                  "(as an Input's generator, initial_multiplier its spread) or None (the dataset variable "
                  "initial_dataset).", choices=DELAY_GENERATORS),
        ParamSpec("initial_multiplier", "float", 0.0, "The generator's multiplier: Constant's value, Normal's "
                  "standard deviation, Uniform's bound."),
        ParamSpec("initial_dataset", "str", "c", "The dataset variable read when the generator is None."),
    ],
    n_inputs=(1, 2), output_shape=delay_size, loop_control=True, input_names=("value", "initial"),
    nnc_properties={"Size": "size", "Initial.Generator": "initial_generator",
                    "Initial.GeneratorMultiplier": "initial_multiplier", "Initial.Dataset": "initial_dataset"},
    from_sdcproj=_computed_by_nnc, caption=lambda p: "",
))


def _lstm_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    """What the unit's RecurrentOutput gives: the hidden state (size) of every step, stacked on the time axis."""
    x, axis = tuple(ins[0]), int(p["axis"])
    steps = step_shape(x, axis, "LSTM")
    if len(steps) != 1 or len(p["size"]) != 1:
        raise ShapeError(f"LSTM reads one feature vector per step and keeps a hidden state of one axis; got steps of "
                         f"{fmt_shape(steps)} and size {list(p['size'])} (reshape the input to (time, features))")
    out = [int(p["size"][0])]
    out.insert(norm_axis(axis, len(x)), int(x[norm_axis(axis, len(x))]))
    return tuple(out)


_LSTM_WEIGHT_PROPERTIES = tuple(f"{g}.{w}.{k}" for g in ("Affine", "IGate", "FGate", "OGate") for w in ("W", "b")
                                for k in ("File", "Initializer", "InitializerMultiplier", "LRateMultiplier"))


def _lstm_from_sdcproj(name: str, props: Mapping[str, str], params: dict, unsupported: list) -> set:
    """NNC's computed properties, and the gates' weight settings: nnconsole gives every gate NNC's defaults
    (Glorot W, zero b, learning-rate multiplier 1), so only other values are reported."""
    defaults = {"Initializer": ("NormalAffineGlorot", "Constant"), "InitializerMultiplier": ("1.0", "0.0"),
                "LRateMultiplier": ("1.0", "1.0"), "File": ("", "")}
    for prop in _LSTM_WEIGHT_PROPERTIES:
        value = (props.get(prop) or "").strip()
        kind, weight = prop.rsplit(".", 1)[1], prop.split(".")[1]
        expected = defaults[kind][0 if weight == "W" else 1]
        if value and value != expected and float_or(value) != float_or(expected):
            unsupported.append(f"layer '{name}' (LSTM): {prop}={value} is not supported; the unit's gates use NNC's "
                               f"default ({expected or 'none'})")
    handled = {"ID", "RecurrentGroupID", "Length", "InnerShape", "H.Initial.Dataset", "C.Initial.Dataset",
               *_LSTM_WEIGHT_PROPERTIES}
    for prop in ("H.Initial.Generator", "C.Initial.Generator"):
        value = (props.get(prop) or "Constant").strip()
        if value not in LSTM_INITIAL_GENERATORS:  # None: the initial state read from a dataset variable
            unsupported.append(f"layer '{name}' (LSTM): {prop}={value} is not supported; a constant initial value "
                               "is used")
            handled.add(prop)
    return handled


def _lstm_from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> dict:
    raise Unsupported("nnabla's LSTM function (sequence-first, with h and c inputs) is read as an LSTMSequence "
                      "layer only when a Transpose makes its input batch-first and its initial states are zeros; "
                      "rebuild it with LSTMSequence or NNC's LSTM unit")


def float_or(text: str) -> Any:
    try:
        return float(text)
    except ValueError:
        return text


register(LayerSpec(
    type="LSTM", group="Unit",
    doc="NNC's LSTM unit: a recurrent block over the time axis of its input, computing at each step the gates "
        "and cell of a long short-term memory from the step's features and the previous hidden state; outputs the "
        "hidden state of every step.",
    params=[
        ParamSpec("size", "ints", (100,), "Size of the hidden state and cell (NNC's Size).", min=1, max_len=1),
        ParamSpec("axis", "int", 0, "The time axis, without the batch axis (NNC's Axis).", min=0, max=1),
        ParamSpec("h_initial_multiplier", "float", 0.0, "The hidden state before the first step: the initial "
                  "generator's multiplier (Constant's value, Normal's standard deviation, Uniform's bound)."),
        ParamSpec("c_initial_multiplier", "float", 0.0, "The cell before the first step: as h_initial_multiplier."),
        ParamSpec("h_initial_generator", "enum", "Constant", "NNC's H.Initial.Generator: what makes the hidden "
                  "state before the first step.", choices=LSTM_INITIAL_GENERATORS),
        ParamSpec("c_initial_generator", "enum", "Constant", "NNC's C.Initial.Generator: what makes the cell "
                  "before the first step.", choices=LSTM_INITIAL_GENERATORS),
    ],
    n_inputs=(1, 1), output_shape=_lstm_shape, loop_control=True,
    nnc_properties={"Size": "size", "Axis": "axis", "H.Initial.GeneratorMultiplier": "h_initial_multiplier",
                    "C.Initial.GeneratorMultiplier": "c_initial_multiplier", "H.Initial.Generator": "h_initial_generator",
                    "C.Initial.Generator": "c_initial_generator"},
    from_sdcproj=_lstm_from_sdcproj, from_nntxt=_lstm_from_nntxt, caption=lambda p: f"size {list(p.get('size', [100]))[0]}",
))
