"""NNC's Arguments: values a Unit (or a network's own Argument layers) give the layers of the network it runs.

A layer takes an Argument's value in the three ways NNC lets it:

- **a property naming the Argument**: ``*Name`` (NNC's macro, in any property: Boolean ``*ConvBS``, array
  ``*ConvKernel``, number, text) or the bare name (``Times=n``). The value is the Unit's, else the Argument's own
  ``value``, read by the Argument's ``type``. A ``*Name`` naming no Argument, or a number property holding text
  that names none, is an error naming the network, layer, property and the Arguments there are.
- **a parameter property**: a Unit's argument ``<layer>.<param>.<Property>`` (``Affine.W.LRateMultiplier=0``,
  ``Convolution_3.b.File=...``; a Parameter layer's ``<layer>.<Property>``) sets that property of a parameter of
  a layer of the network, Property being one of NNC's ``File``, ``Initializer``, ``InitializerMultiplier``,
  ``LRateMultiplier``; an Argument layer so named gives the default. The layer's ``initializers`` and
  ``lr_multipliers`` take the value; a key whose first part is a Unit of the network is passed on to that
  unit (``Inner.Affine.W.File``). ``File`` (weights read from a file) is kept in the project and written back,
  but the engine starts such a weight from its initializer (the import says so).
- **a Unit's own argument value** ``ConvBS=*NetworkBS`` names an Argument of the network holding the Unit: it is
  substituted before that Unit is expanded, so arguments pass down through units of units.

NNC's computed padding ``*ConvolutionPaddingSize`` follows an argument kernel: a convolution whose kernel is an
argument keeps its BorderMode as its ``pad`` ('same', 'full', 'valid'), computed here once the kernel is known.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from nnconsole.engine.layers.initializers import INITIALIZER_ALIASES
from nnconsole.engine.layers.nnc_values import convert_value, to_text
from nnconsole.engine.layers.registry import find_spec
from nnconsole.engine.layers.types.unit import format_arguments, parse_arguments
from nnconsole.engine.project.model import Initializer, Layer, Network

Problem = Tuple[str, str]
PARAMETER_PROPERTIES = ("Initializer", "InitializerMultiplier", "LRateMultiplier", "File")  # applied in this order
BORDER_MODES = ("valid", "same", "full")  # NNC's BorderMode: a convolution's pad computed from its kernel
_MACRO = re.compile(r"^\*\s*([A-Za-z_][\w.\-]*)\s*$")
_TYPED_KINDS = ("int", "float", "bool", "ints")


def macro_name(value: Any) -> Optional[str]:
    """'*ConvBS' -> 'ConvBS' (NNC's reference to an Argument); None for anything else."""
    match = _MACRO.match(value) if isinstance(value, str) else None
    return match.group(1) if match else None


def _params(layer: Any) -> Mapping[str, Any]:
    params = getattr(layer, "params", None)
    return params if isinstance(params, Mapping) else {}


def has_arguments(network: Network) -> bool:
    return any(layer.type == "Argument" for layer in network.layers)


def convert(value: str, arg_type: str) -> Any:
    """An argument's text read by NNC's Argument Type (ValueError when it does not fit)."""
    text = str(value).strip()
    if arg_type in ("Boolean", "BooleanOrMacro"):
        if text.lower() not in ("true", "false"):
            raise ValueError(f"'{text}' is not True or False")
        return text.lower() == "true"
    if arg_type in ("Int", "PInt", "UInt"):
        return int(text)
    if arg_type in ("IntArray", "PIntArray", "UIntArray"):
        return [int(v) for v in text.replace(" ", "").split(",") if v]
    if arg_type == "Float":
        return float(text)
    if arg_type == "FloatArray":
        return [float(v) for v in text.replace(" ", "").split(",") if v]
    return text


def parameter_key(key: str, layers: Mapping[str, Any]) -> Optional[Tuple[str, str, str]]:
    """``key`` read as a parameter property of one of ``layers``: (layer, parameter, Property), or (unit, '',
    rest) for a key a Unit of the network passes on; None when it is not one."""
    parts = key.split(".")
    if len(parts) < 2:
        return None
    first = layers.get(parts[0])
    if first is not None and first.type == "Unit":
        return parts[0], "", ".".join(parts[1:])
    if parts[-1] not in PARAMETER_PROPERTIES:
        return None
    if len(parts) == 2:  # a Parameter layer spells its one weight's settings without the weight's name
        spec = find_spec(getattr(layers.get(parts[0]), "type", ""))
        if spec is None or spec.group != "Parameter" or not spec.weight_order:
            return None
        return parts[0], spec.weight_order[0], parts[1]
    name, weight = ".".join(parts[:-2]), parts[-2]
    spec = find_spec(getattr(layers.get(name), "type", ""))
    if spec is None or weight not in spec.weight_order:
        return None
    return name, weight, parts[-1]


def _parameter_hint(layers: Mapping[str, Any]) -> str:
    named = [f"{n}.{(find_spec(x.type).weight_order or ('W',))[0]}.LRateMultiplier" for n, x in layers.items()
             if find_spec(x.type) is not None and find_spec(x.type).weight_order]
    return f"; or a parameter property such as '{named[0]}'" if named else ""


def argument_values(network: Network, given: Mapping[str, str]
                    ) -> Tuple[Dict[str, Any], Dict[str, str], List[str]]:
    """Each Argument of ``network`` -> its value (``given`` first, else its own); the parameter properties set
    (``<layer>.<param>.<Property>`` -> text, by ``given`` or by Argument layers so named); the problems."""
    layers = {x.name: x for x in network.layers if isinstance(x.name, str)}
    declared = {n: x for n, x in layers.items() if x.type == "Argument"}
    values: Dict[str, Any] = {}
    parameters: Dict[str, str] = {}
    problems: List[str] = []
    for name, text in given.items():
        if name not in declared and parameter_key(name, layers) is None:
            problems.append(f"argument '{name}' is not an Argument of the network (it has: "
                            f"{', '.join(declared) or 'none'}{_parameter_hint(layers)})")
    for name, layer in declared.items():
        text = given.get(name, _params(layer).get("value", "1"))
        if parameter_key(name, layers) is not None:
            parameters[name] = str(text)
            continue
        arg_type = str(_params(layer).get("type", "Text"))
        if macro_name(text) is not None:
            problems.append(f"argument '{name}' = '{text}' names no Argument of the network holding the unit; add an "
                            f"Argument layer '{macro_name(text)}' there or give a value")
            continue
        try:
            values[name] = convert(text, arg_type)
        except ValueError:
            problems.append(f"argument '{name}' = '{text}' is not a valid {arg_type}")
    parameters.update({n: t for n, t in given.items() if n not in declared and parameter_key(n, layers)})
    return values, parameters, problems


def _substitute_text(text: str, values: Mapping[str, Any]) -> Tuple[str, List[Tuple[str, str]]]:
    """A Unit's arguments text with each ``*Name`` value replaced by the argument's value."""
    try:
        items = parse_arguments(text)
    except ValueError:
        return text, []  # reported when the unit is expanded
    missing = [(k, v) for k, v in items.items() if macro_name(v) and macro_name(v) not in values]
    out = {k: (to_text(values[macro_name(v)]) if macro_name(v) in values else v) for k, v in items.items()}
    return format_arguments(out), missing


def _missing(layer: Layer, prop: str, value: Any, network: str, values: Mapping[str, Any]) -> Problem:
    where = f"network '{network}'" if network else "the network"
    return layer.name, (f"property {prop} = '{value}' names no Argument of {where} (its Arguments: "
                        f"{', '.join(values) or 'none'}); add an Argument layer of that name or give a value")


def _computed_pad(params: Dict[str, Any]) -> None:
    """A convolution's pad kept as NNC's BorderMode becomes numbers once its kernel is known."""
    mode, kernel = params.get("pad"), params.get("kernel")
    if not (isinstance(mode, str) and mode in BORDER_MODES and isinstance(kernel, (list, tuple))):
        return
    dilation = params.get("dilation")
    dil = list(dilation) if isinstance(dilation, (list, tuple)) and len(dilation) == len(kernel) else [1] * len(kernel)
    try:
        factor = {"same": 0.5, "full": 1, "valid": 0}[mode]
        params["pad"] = [int(d * (int(k) - 1) * factor) for k, d in zip(kernel, dil)]
    except (TypeError, ValueError):
        return  # a kernel that is not numbers: shape inference names it


def substitute(layers: Sequence[Layer], values: Mapping[str, Any], network: str = "") -> Tuple[List[Layer],
                                                                                                List[Problem]]:
    """The layers with every property naming an Argument given its value, and the references naming none."""
    out: List[Layer] = []
    problems: List[Problem] = []
    for layer in layers:
        if layer.type == "Argument":
            out.append(layer)
            continue
        spec = find_spec(layer.type)
        params: Dict[str, Any] = {}
        for key, value in _params(layer).items():
            name = macro_name(value)
            if layer.type == "Unit" and key == "network":
                pass  # the network a unit runs is a network's name, never an Argument's
            elif layer.type == "Unit" and key == "arguments" and isinstance(value, str):
                value, missing = _substitute_text(value, values)
                problems += [_missing(layer, f"arguments ({k})", v, network, values) for k, v in missing]
            elif name is not None:
                if name in values:
                    value = values[name]
                else:
                    problems.append(_missing(layer, key, value, network, values))
            elif isinstance(value, str) and value.strip() in values:
                value = values[value.strip()]
            elif values and isinstance(value, str) and spec is not None and key in spec.defaults() and \
                    spec.param(key).kind in _TYPED_KINDS and not (key == "pad" and value in BORDER_MODES):
                # text in a number property of a network with Arguments: a name meant as one (else the kind's check)
                try:
                    convert_value(spec.param(key).kind, value)
                except ValueError:
                    problems.append(_missing(layer, key, value, network, values))
            params[key] = value
        _computed_pad(params)
        out.append(dataclasses.replace(layer, params=params) if params != _params(layer) else layer)
    return out, problems


def _set_parameter_property(layer: Layer, weight: str, prop: str, text: str) -> Tuple[Layer, Optional[str]]:
    """``layer`` with one property of its ``weight`` set from ``text`` (NNC's spelling), or a problem."""
    text = str(text).strip()
    if prop == "File" or text == "":
        return layer, None  # File: kept in the project; the weight starts from its initializer
    spec = find_spec(layer.type)
    inits = dict(layer.initializers)
    current = inits.get(weight) or (spec.weights.get(weight) if spec else None) or Initializer()
    if prop == "Initializer":
        kind = INITIALIZER_ALIASES.get(text)
        if kind is None:
            return layer, (f"{weight}.Initializer '{text}' is not an initializer nnconsole has (one of: "
                           f"{', '.join(sorted(INITIALIZER_ALIASES))})")
        inits[weight] = dataclasses.replace(current, type=kind)
        return dataclasses.replace(layer, initializers=inits), None
    try:
        number = float(text)
    except ValueError:
        return layer, f"{weight}.{prop} '{text}' is not a number"
    if prop == "LRateMultiplier":
        if number < 0:
            return layer, f"{weight}.LRateMultiplier {number} is negative; 0 freezes the parameter"
        return dataclasses.replace(layer, lr_multipliers={**layer.lr_multipliers, weight: number}), None
    field = "value" if current.type == "Constant" else "multiplier"  # NNC's multiplier is a Constant's value
    inits[weight] = dataclasses.replace(current, **{field: number})
    return dataclasses.replace(layer, initializers=inits), None


def apply_parameter_properties(layers: Sequence[Layer], parameters: Mapping[str, str]
                               ) -> Tuple[List[Layer], List[str]]:
    """The layers with the parameter properties ``parameters`` set (a Unit's are added to its arguments)."""
    if not parameters:
        return list(layers), []
    by_name = {x.name: x for x in layers if isinstance(x.name, str)}
    problems: List[str] = []
    order = {p: i for i, p in enumerate(PARAMETER_PROPERTIES)}
    for key, text in sorted(parameters.items(), key=lambda kv: order.get(kv[0].rsplit(".", 1)[-1], 9)):
        target = parameter_key(key, by_name)
        if target is None:
            problems.append(f"argument '{key}' names no parameter of a layer of the network")
            continue
        name, weight, prop = target
        layer = by_name[name]
        if layer.type == "Unit":
            inner = str(_params(layer).get("arguments", "") or "")
            joined = format_arguments({**parse_arguments(inner), prop: str(text)}) if inner.strip() else \
                format_arguments({prop: str(text)})
            by_name[name] = dataclasses.replace(layer, params={**_params(layer), "arguments": joined})
            continue
        by_name[name], problem = _set_parameter_property(layer, weight, prop, text)
        if problem:
            problems.append(f"argument '{key}': {problem}")
    return [by_name.get(x.name, x) if isinstance(x.name, str) else x for x in layers], problems


def _needs_resolving(network: Network) -> bool:
    for layer in network.layers:
        if layer.type == "Argument":
            return True
        spec = find_spec(layer.type)
        for key, value in _params(layer).items():
            if isinstance(value, str) and (value.startswith("*") or (spec is not None and key in spec.defaults()
                                                                     and spec.param(key).kind in _TYPED_KINDS)):
                return True
    return False


def resolve(network: Network, given: Mapping[str, str], name: str = "") -> Tuple[Network, List[Problem], List[str]]:
    """``network`` run with the arguments ``given`` (name -> text): properties naming Arguments take their values,
    parameter properties are set, computed pads follow their kernels; Argument layers are kept. Returns the
    network, the problems on its layers (references naming no Argument) and the problems of ``given``."""
    if not given and not _needs_resolving(network):
        return network, [], []
    values, parameters, given_problems = argument_values(network, given)
    layers, problems = substitute(network.layers, values, name)
    layers, parameter_problems = apply_parameter_properties(layers, parameters)
    return dataclasses.replace(network, layers=layers), problems, given_problems + parameter_problems


def with_default_arguments(network: Network) -> Network:
    """A network on its own (its tab, its checks): its Arguments' own values substituted."""
    return resolve(network, {})[0]


def default_argument_problems(network: Network, name: str = "") -> List[Problem]:
    """What stops ``network`` taking its own Arguments' values, each on the layer it concerns."""
    _, problems, own = resolve(network, {}, name)
    return problems + [(next((x.name for x in network.layers if x.type == "Argument"), ""), m) for m in own]


def without_arguments(network: Network) -> Network:
    """A network to build or write: its Arguments' own values substituted and the Argument layers (which
    hold a value, not a computation) left out."""
    if not _needs_resolving(network):
        return network
    network = with_default_arguments(network)
    return dataclasses.replace(network, layers=[x for x in network.layers if x.type != "Argument"])


def unit_argument_rows(network: Network) -> List[Tuple[str, str, str]]:
    """What a Unit running ``network`` may set, as NNC's Unit property list shows it: (name, NNC type, default
    text) for each Argument, then each parameter property of each layer with weights
    (``Convolution.W.LRateMultiplier``: 'Float', '1.0'); Argument layers named for a parameter property come once."""
    rows: List[Tuple[str, str, str]] = []
    for layer in network.layers:
        if layer.type == "Argument" and isinstance(layer.name, str):
            rows.append((layer.name, str(_params(layer).get("type", "Text")), str(_params(layer).get("value", ""))))
    taken = {r[0] for r in rows}
    for layer in network.layers:
        spec = find_spec(layer.type)
        if spec is None or not spec.weight_order or layer.type in ("Unit", "Argument"):
            continue
        for weight in spec.weight_order:
            prefix = f"{layer.name}." if spec.group == "Parameter" else f"{layer.name}.{weight}."
            init = layer.initializers.get(weight) or spec.weights.get(weight) or Initializer()
            defaults = {"Initializer": ("Option", init.type),
                        "InitializerMultiplier": ("Float", to_text(float(init.value if init.type == "Constant"
                                                                         else init.multiplier))),
                        "LRateMultiplier": ("Float", to_text(float(layer.lr_multipliers.get(weight, 1.0)))),
                        "File": ("File", "")}
            for prop in ("File", "Initializer", "InitializerMultiplier", "LRateMultiplier"):
                if prefix + prop not in taken:
                    rows.append((prefix + prop, *defaults[prop]))
            if spec.group == "Parameter":
                break
    return rows
