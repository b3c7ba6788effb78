"""The IO layers: Input (a dataset variable, one CSV column, entering the network, or values a generator makes:
NNC's Generator property, see nnconsole.engine.data.generated) and Constant."""
from __future__ import annotations

from typing import Any, Dict, Mapping

from nnconsole.engine.layers.nntxt_codec import Unsupported, set_shape
from nnconsole.engine.layers.registry import LayerSpec, ParamSpec, Shape, ShapeError, register
from nnconsole.engine.layers.nnc_values import as_int, resolve


def input_variable(layer, params) -> str:
    """The dataset variable an Input layer reads: its ``variable`` parameter, else its name."""
    return params.get("variable") or layer.name


NONE = "None"
# NNC's Input Generator options, in its order (nnconsole.engine.data.generated makes their values).
GENERATORS = (NONE, "Normal", "Uniform", "Constant", "Range")


def is_generated(kind: object) -> bool:
    """True when an Input's ``generator`` parameter names a generator (not empty nor ``None``)."""
    return bool(kind) and str(kind) != NONE


def input_generator(params: Mapping[str, Any]) -> str:
    """The generator filling an Input ("Normal", "Uniform", "Constant", "Range"), or "" when it reads the dataset."""
    kind = params.get("generator", NONE)
    return str(kind) if is_generated(kind) else ""


def _input_caption(p: Mapping[str, Any]) -> str:
    kind = input_generator(p)
    if kind:
        return f"{kind} x {float(p.get('generator_multiplier', 1.0)):g}"
    return f"variable {p.get('variable')}" if p.get("variable") else ""


def reads_dataset(params: Mapping[str, Any]) -> bool:
    """Whether an Input reads its dataset variable: not when a generator gives its value instead (NNC's
    Generator property set to other than None), so no dataset column feeds it."""
    return not input_generator(params)


def _input_from_sdcproj(name: str, props: Dict[str, str], params: Dict[str, Any], unsupported: list) -> set:
    """NNC's Order -1 (inputs in their automatic order) is what nnconsole does; another order is reported."""

    value = resolve(props, "Order")
    if value is not None and as_int(value, -1) != -1:
        unsupported.append(f"layer '{name}' (Input): Order={value} is not supported; nnconsole orders the runtime "
                           "network's inputs itself")
    return {"Order"}


register(LayerSpec(
    type="Input", group="IO",
    doc="A dataset variable (a CSV column such as x or y) entering the network with the given shape, or values a "
        "generator makes instead (NNC's Generator: a GAN's noise z, a constant target).",
    params=[
        ParamSpec("shape", "ints", (1, 28, 28), "Shape of one sample without the batch axis, e.g. [1, 28, 28].",
                  min=1),
        ParamSpec("variable", "str", "", "Dataset variable name (CSV header); empty means the layer name."),
        ParamSpec("generator", "enum", NONE, "NNC's Generator: None reads the dataset variable; Normal (mean 0, "
                  "standard deviation = multiplier), Uniform (in [-multiplier, multiplier]), Constant (= multiplier) "
                  "or Range (0, m, 2m... along the last axis) fill it instead, e.g. a GAN's noise z and its "
                  "constant targets; no dataset column is read.", choices=GENERATORS),
        ParamSpec("generator_multiplier", "float", 1.0, "NNC's GeneratorMultiplier: the generator's one "
                  "parameter (see generator)."),
    ],
    n_inputs=(0, 0),
    output_shape=lambda ins, p: tuple(p["shape"]),
    is_input=True,
    nnc_properties={"Size": "shape", "Dataset": "variable", "Generator": "generator",
                    "GeneratorMultiplier": "generator_multiplier"}, from_sdcproj=_input_from_sdcproj,
    caption=_input_caption,
))


def _constant_number(p: Mapping[str, Any]) -> float:
    """The Constant's value as a number, or ShapeError saying why it is not one."""
    text = str(p["value"]).strip()
    try:
        value = float(text)
    except ValueError:
        raise ShapeError(f"Constant value {text!r} is not a number; a Constant entering the network holds one "
                         "number (ValueType Int or Float) - text constants are Unit arguments, which nnconsole "
                         "does not support yet") from None
    if p["value_type"] == "Int" and not value.is_integer():
        raise ShapeError(f"Constant value {text} is not an integer but its ValueType is Int; use Float")
    return value


def _constant_build(ctx, inputs, layer):
    import nnabla.functions as F  # deferred: nnabla stays out of the GUI
    return F.constant(_constant_number(ctx.params(layer)), (ctx.batch_size, 1))


def _constant_to_nntxt(f: Any, p: Mapping[str, Any], in_shapes: list, out_shape: Shape, mode: str) -> None:
    f.constant_param.val = _constant_number(p)
    set_shape(f.constant_param.shape, [-1, 1])


def _constant_from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> Dict[str, Any]:
    dims = [int(d) for d in f.constant_param.shape.dim]
    if dims[1:] not in ([], [1]):
        raise Unsupported(f"a Constant of shape {dims} (nnconsole's Constant is one number per sample)")
    return {"value": f"{f.constant_param.val:g}", "value_type": "Float"}


register(LayerSpec(
    type="Constant", group="IO",
    doc="One number entering the network: every sample gets a (1,)-shaped input holding value.",
    params=[
        ParamSpec("value", "str", "", "The number (NNC's Value)."),
        ParamSpec("value_type", "enum", "Text", "NNC's ValueType: Int or Float for a number entering the network "
                  "(Text values are a Unit's arguments).", choices=("Text", "Int", "Float")),
        ParamSpec("arg_name", "str", "", "NNC's ArgName: the Unit argument it names (kept for files; unused)."),
    ],
    n_inputs=(0, 0),
    output_shape=lambda ins, p: (_constant_number(p), (1,))[1],
    build=_constant_build,
    nnc_properties={"Value": "value", "ValueType": "value_type", "ArgName": "arg_name"},
    to_nntxt=_constant_to_nntxt, from_nntxt=_constant_from_nntxt,
    caption=lambda p: f"{p.get('value', '')}",
    examples=(({"value": "2.5", "value_type": "Float"}, ()),),
))
