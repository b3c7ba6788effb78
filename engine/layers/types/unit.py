"""NNC's Unit and Argument layers (palette category Unit): another network of the project used as a layer.

A Unit names a network of the project (NNC's ``Network`` property) and passes values to that network's
Argument layers (``arguments``: ``name=value`` pairs separated by ';', NNC's other Unit properties), or to its
layers' parameter properties (``Convolution.W.LRateMultiplier``). An Argument layer, unconnected, declares one
such value: its default ``value`` and its NNC ``type``; a layer of the unit network whose property is the
Argument's name (``*Name`` or the bare name) takes the value (``nnconsole.engine.network.arguments``). The engine replaces every Unit by
its network's layers before checking, building or exporting (``nnconsole.engine.network.units``), so neither
type is ever built on its own.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping

from nnconsole.engine.layers.registry import LayerSpec, ParamSpec, Shape, ShapeError, register

# NNC's Argument Type options (layer_component/Unit/Argument.txt), in NNC's order.
ARGUMENT_TYPES = ("Boolean", "BooleanOrMacro", "Int", "IntArray", "PInt", "PIntArray", "PIntArrays", "UInt",
                  "UIntArray", "Float", "FloatArray", "FloatArrays", "Text", "File")


def parse_arguments(text: str) -> Dict[str, str]:
    """'units=10; kernel=3,3' -> {'units': '10', 'kernel': '3,3'}; ValueError names a malformed pair."""
    out: Dict[str, str] = {}
    for part in (text or "").split(";"):
        if not part.strip():
            continue
        name, sep, value = part.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"argument '{part.strip()}' is not name=value (write e.g. 'units=10; kernel=3,3')")
        out[name.strip()] = value.strip()
    return out


def format_arguments(values: Mapping[str, str]) -> str:
    """The inverse of ``parse_arguments``."""
    return "; ".join(f"{k}={v}" for k, v in values.items())


def _not_expanded(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    network = p.get("network") or ""
    raise ShapeError(f"unit of network '{network}' could not be expanded" if network else
                     "a Unit needs the network it uses: set its network (NNC's Network property)")


def _no_output(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    return ()


def _no_build(ctx: Any, inputs: list, layer: Any) -> Any:  # pragma: no cover - units are expanded before build
    raise NotImplementedError(f"{layer.type} '{layer.name}' must be expanded before the graph is built")


def _unit_from_sdcproj(name: str, props: Dict[str, str], params: Dict[str, Any], unsupported: List[str]) -> List[str]:
    """Every property that is not NNC's own (Input, Network, ParameterScope, Output, Cost*) is an argument."""
    own = {"Name", "Input", "Network", "ParameterScope", "Output"}
    args = {k: v for k, v in props.items() if k not in own and not k.startswith("Cost")}
    if args:
        params["arguments"] = format_arguments(args)
    for key, value in args.items():
        if key.endswith(".File") and value.strip() and not value.strip().startswith("*"):
            unsupported.append(f"unit '{name}': argument {key}={value} (weights read from a file) is kept in the "
                               "project but not loaded; the weight starts from its initializer")
    return [*args, "Input", "Output", *[k for k in props if k.startswith("Cost")]]


def _arguments_caption(params: Mapping[str, Any]) -> str:
    """What the unit's node shows of its arguments: 'Maps=4, Convolution.W.LRateMultiplier=0' (values set)."""
    try:
        given = parse_arguments(str(params.get("arguments", "") or ""))
    except ValueError:
        return "arguments?"
    return ", ".join(f"{k}={v}" for k, v in given.items() if v != "")


def _unit_to_sdcproj(params: Mapping[str, Any]) -> Dict[str, str]:
    out = {"Network": str(params.get("network", ""))}
    try:
        out.update(parse_arguments(str(params.get("arguments", ""))))
    except ValueError:
        pass
    return out


register(LayerSpec(
    type="Unit", group="Unit",
    doc="Another network of the project used as a layer: its Input layers read this layer's inputs (in the order "
        "they are listed), its output is this layer's output, and its Argument layers take the values given "
        "here. Its layers are named unit/layer and keep their weights under unit scope/layer scope (u1/fc/affine/W).",
    params=[ParamSpec("network", "str", "", "The network this unit runs (NNC's Network)."),
            ParamSpec("arguments", "str", "", "Values for the network's Argument layers: 'name=value' pairs "
                                              "separated by ';' (an Argument not given keeps its own value). A name "
                                              "'<layer>.<param>.<Property>' (Property: File, Initializer, "
                                              "InitializerMultiplier, LRateMultiplier) sets that property of a "
                                              "weight of the network's layer (NNC's parameter-property arguments: "
                                              "'Affine.W.LRateMultiplier=0'); a value '*Name' is an Argument of the "
                                              "network holding this unit.")],
    n_inputs=(0, None), output_shape=_not_expanded, build=_no_build, loop_control=True,
    nnc_properties={"Network": "network"}, from_sdcproj=_unit_from_sdcproj, to_sdcproj=_unit_to_sdcproj,
    caption=lambda p: " · ".join(x for x in (str(p.get("network", "")), _arguments_caption(p)) if x),
))

def _argument_from_sdcproj(name: str, props: Dict[str, str], params: Dict[str, Any], unsupported: List[str]
                           ) -> List[str]:
    """An Argument named for a parameter's File (``Convolution.W.File``) with a value: kept, not loaded."""
    value = (props.get("Value") or "").strip()
    if name.endswith(".File") and value and not value.startswith("*"):
        unsupported.append(f"argument '{name}' = {value} (weights read from a file) is kept in the project but not "
                           "loaded; the weight starts from its initializer")
    return []


register(LayerSpec(
    type="Argument", group="Unit",
    doc="A value a Unit passes to the network it runs: a property of a layer of this network written as the "
        "Argument's name, '*Name' (NNC's macro, in any property) or the bare name ('Times=n'), takes the value (the "
        "Unit's, else this layer's own). An Argument named '<layer>.<param>.<Property>' (e.g. 'Convolution.W.File') "
        "gives that parameter property's default. It has no inputs or outputs.",
    params=[ParamSpec("value", "str", "1", "The value used when the Unit gives none (NNC's Value)."),
            ParamSpec("type", "enum", "Text", "How the value is read (NNC's Type).", choices=ARGUMENT_TYPES),
            ParamSpec("search", "bool", False, "NNC's Search: 'nnconsole search' varies the value (over the "
                                                  "layer's search range, else one made from the value).")],
    n_inputs=(0, 0), output_shape=_no_output, loop_control=True,
    nnc_properties={"Value": "value", "Type": "type", "Search": "search"}, from_sdcproj=_argument_from_sdcproj,
    caption=lambda p: f"{p.get('value', '')}",
))
