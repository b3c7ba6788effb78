"""Expanding NNC's Unit layers into the layers of the network each one runs (as NNC expands them on export).

A Unit ``u`` naming network ``N`` becomes ``N``'s layers, named ``u/<layer>``, with:

- ``N``'s Input layers (those that feed a layer other than a loss) replaced by ``u``'s inputs, in order;
- ``N``'s output (its one layer that feeds nothing, losses, Inputs and Arguments left out) renamed ``u``, so
  the layers after the unit are unchanged;
- ``N``'s Argument layers and losses left out; a property of a layer of ``N`` written as an Argument's name
  takes that argument's value (the Unit's ``arguments``, else the Argument's own ``value``), read by the
  Argument's type;
- weights under ``<u's parameter scope>/<layer's scope>`` (NNC's ParameterScope, default the names), so
  ``u1/fc/affine/W``; units inside ``N`` expand the same way (``u1/inner/fc/affine/W``).

A network that uses itself, directly or through other units, is refused with the chain named; a missing
network, an argument ``N`` does not declare or inputs that do not match are errors on the Unit.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from nnconsole.engine.layers.registry import find_spec
from nnconsole.engine.layers.types.unit import format_arguments, parse_arguments
from nnconsole.engine.network.arguments import (default_argument_problems, has_arguments, resolve,  # noqa: F401
                                                with_default_arguments, without_arguments)
from nnconsole.engine.project.model import Layer, Network
from nnconsole.engine.network.expansion_size import MAX_UNIT_DEPTH, SizeProblem, size_problem
from nnconsole.engine.network.repeat_blocks import MAX_EXPANDED_LAYERS
from nnconsole.engine.network.shared_params import UnitInnerLayer, weight_scope_of
from nnconsole.engine.project.structure import all_networks, MAIN_NETWORK

Problem = Tuple[str, str]
MAX_UNIT_LAYERS = MAX_EXPANDED_LAYERS  # a backstop: expansion_size counts the whole network before expanding


def has_units(network: Network) -> bool:
    return any(layer.type == "Unit" for layer in network.layers)


def _params(layer: Any) -> Mapping[str, Any]:
    """A layer's params, or {} when a hand-edited file holds something else there (inference reports it)."""
    params = getattr(layer, "params", None)
    return params if isinstance(params, Mapping) else {}


def _is_kind(layer: Layer, *flags: str) -> bool:
    spec = find_spec(layer.type)
    return spec is not None and any(getattr(spec, f) for f in flags)


def _expand_one(unit: Layer, networks: Mapping[str, Network], chain: List[str], origin: Dict[str, str],
                memo: Dict[Tuple[str, str], Tuple[Network, List[Problem]]]) -> Tuple[Optional[List[Layer]], List[str]]:
    """The layers replacing ``unit``, or None and the problems that stop it."""
    target_name = str(_params(unit).get("network", "") or "")
    if not target_name:
        return None, ["a Unit needs the network it uses: set its network (NNC's Network property)"]
    if target_name in chain:
        loop = " -> ".join(chain[chain.index(target_name):] + [target_name])
        return None, [f"unit uses network '{target_name}', which uses itself: {loop}; a unit cannot contain itself"]
    if len(chain) > MAX_UNIT_DEPTH:
        return None, [f"units nest more than {MAX_UNIT_DEPTH} deep ({' -> '.join(chain[:3])} -> ...); "
                      "use fewer levels of units"]
    if target_name not in networks:
        return None, [f"unit uses network '{target_name}', which the project does not have "
                      f"(networks: {', '.join(networks) or 'none'})"]
    try:
        given = parse_arguments(str(_params(unit).get("arguments", "") or ""))
    except ValueError as exc:
        return None, [str(exc)]
    key = (target_name, format_arguments(given))
    if key not in memo:  # each network expands once per set of arguments (a cycle shows in its own expansion)
        body, body_problems, given_problems = resolve(networks[target_name], given, target_name)
        if given_problems:
            return None, given_problems
        expanded, problems = _expand(body, networks, chain + [target_name], {}, memo)
        memo[key] = (expanded, body_problems + problems)
    inner_net, inner_problems = memo[key]
    if inner_problems:  # the first one (units of units would multiply the messages)
        (first_layer, first), more = inner_problems[0], len(inner_problems) - 1
        text = first if len(first) <= 2000 else first[:600] + " ... " + first[-1200:]  # the cause is at the end
        also = f" (+{more} more problem{'s' if more != 1 else ''})" if more else ""
        return None, [f"in network '{target_name}'{also}, layer '{first_layer}': {text}"]
    dropped = {layer.name for layer in inner_net.layers
               if layer.type == "Argument" or _is_kind(layer, "is_loss", "is_metric")}
    kept = [layer for layer in inner_net.layers if layer.name not in dropped]
    fed = {src for layer in kept for src in layer.inputs}
    inputs = [layer.name for layer in kept if _is_kind(layer, "is_input") and layer.name in fed]
    if len(inputs) != len(unit.inputs):
        return None, [f"network '{target_name}' has {len(inputs)} Input layer(s) ({', '.join(inputs) or 'none'}) "
                      f"but the unit has {len(unit.inputs)} input(s); connect one input per Input layer"]
    ends = [layer.name for layer in kept if layer.name not in fed and not _is_kind(layer, "is_input")]
    if len(ends) != 1:
        return None, [f"network '{target_name}' must end in one layer to be a unit's output; it ends in "
                      f"{len(ends)} ({', '.join(ends) or 'none'})"]
    if len(kept) > MAX_UNIT_LAYERS:
        return None, [f"network '{target_name}' expands into {len(kept):,} layers, more than {MAX_UNIT_LAYERS:,}; "
                      "units that use units multiply their layers"]
    rename = dict(zip(inputs, unit.inputs))
    for layer in kept:
        if layer.name not in rename:
            rename[layer.name] = unit.name if layer.name == ends[0] else f"{unit.name}/{layer.name}"
    scope = weight_scope_of(unit)
    out: List[Layer] = []
    for layer in [x for x in kept if x.name not in inputs]:
        fields = {f.name: getattr(layer, f.name) for f in dataclasses.fields(Layer)}
        given = layer.scope_given if isinstance(layer, UnitInnerLayer) else bool((layer.parameter_scope or "").strip())
        fields.update(name=rename[layer.name], inputs=[rename.get(s, s) for s in layer.inputs], scope_given=given,
                      parameter_scope=f"{scope}/{weight_scope_of(layer)}",
                      position=unit.position if layer.name == ends[0] else layer.position)
        out.append(UnitInnerLayer(**fields))
        origin[fields["name"]] = unit.name
    return out, []


def _expand(network: Network, networks: Mapping[str, Network], chain: List[str], origin: Dict[str, str],
            memo: Dict[Tuple[str, str], Tuple[Network, List[Problem]]]) -> Tuple[Network, List[Problem]]:
    layers: List[Layer] = []
    problems: List[Problem] = []
    for layer in network.layers:
        if layer.type != "Unit":
            layers.append(layer)
            continue
        try:
            inner, unit_problems = _expand_one(layer, networks, chain, origin, memo)
        except (TypeError, AttributeError, ValueError) as exc:  # a hand-edited file's malformed layers
            inner, unit_problems = None, [f"could not expand this unit ({type(exc).__name__}: {exc}); check the "
                                          "fields of its network's layers"]
        if inner is None:
            problems.extend((layer.name, m) for m in unit_problems)
            layers.append(layer)
        else:
            layers.extend(inner)
    return dataclasses.replace(network, layers=layers), problems


def expand_units(network: Network, networks: Optional[Mapping[str, Network]],
                 name: str = "") -> Tuple[Network, Dict[str, str], List[Problem]]:
    """``network`` with every Unit replaced by its network's layers; each new layer's Unit (name -> unit name);
    the problems, each on the Unit it stops (that Unit is kept as it is). A network whose expansion would be too
    big (``expansion_size.size_problem``: units and repeat blocks counted, not built) is returned unexpanded with
    that one problem, on the block or unit that makes it too big. ``networks`` are the project's
    networks by name (``structure.all_networks``); ``name`` is this network's, for the recursion check."""
    origin: Dict[str, str] = {}
    too_big = size_problem(network, networks, name)  # counted first: nothing is built for a network too big to build
    if too_big:
        return network, origin, [too_big]
    if not has_units(network):
        return network, origin, []
    if networks is None:
        return network, origin, [(layer.name, "a Unit needs the project's networks to be checked or built "
                                               "(internal: pass networks=)") for layer in network.layers
                                 if layer.type == "Unit"]
    network = with_default_arguments(network)  # its Units' arguments may name its own Arguments (ConvBS=*ConvBS)
    expanded, problems = _expand(network, networks, [name] if name else [], origin, {})
    return expanded, origin, problems


def fold_unit_problems(info: Any, origin: Mapping[str, str], problems: Sequence[Problem],
                       unit_inputs: Optional[Mapping[str, List[str]]] = None) -> Any:
    """Shape inference of an expanded network reported on the user's layers: each Unit shows its own type and
    inputs (its output is its network's output), each expansion problem replaces its Unit's error, and an error
    in a unit's layer is also named on the Unit (``info``: shapes.NetworkInfo)."""
    if not origin and not problems:
        return info
    for unit, sources in (unit_inputs or {}).items():
        li = info.layers.get(unit)
        if li is not None:
            li.type = "Unit"
            li.in_shapes = [info.layers[s].out_shape if s in info.layers else None for s in sources]
    stopped = {name for name, _ in problems}
    too_big = next((name for p in problems if isinstance(p, SizeProblem) for name in p[:1]), None)
    if too_big is not None:  # nothing was expanded: the other Units are not errors of their own
        for name in unit_inputs or {}:
            li = info.layers.get(name)
            if name != too_big and li is not None:
                stopped.add(name)
                li.error = f"not expanded: the network is too big to expand (see '{too_big}')"
    errors = [(n, m) for n, m in info.errors if n not in stopped]
    for name, message in problems:
        li = info.layers.get(name)
        if li is not None:
            li.out_shape, li.error = None, message
        errors.append((name, message))
    for name, message in list(errors):
        unit = origin.get(name)
        if unit is not None and unit != name:
            errors.append((unit, f"layer '{name}': {message}"))
            li = info.layers.get(unit)
            if li is not None and not li.error:
                li.error = f"layer '{name}': {message}"
    info.errors = errors
    return info


class UnitError(ValueError):
    """A project's units cannot be expanded; the message lists each problem by network and layer."""

def expanded_project(project: Any) -> Any:
    """A copy of ``project`` whose networks (Main and the others) have every Unit expanded, for the engine to
    train or export (the project itself keeps its units); UnitError lists what stops a unit."""

    networks = all_networks(project)
    if not any(has_units(n) or has_arguments(n) for n in networks.values()):
        return project
    out = project.copy()
    problems: List[str] = []
    expanded: Dict[str, Network] = {}
    for name, network in networks.items():
        expanded[name], _, found = expand_units(network, networks, name)
        problems += [f"  network '{name}', layer '{layer}': {message}" for layer, message in found]
    if problems:
        raise UnitError(f"cannot expand the project's units, {len(problems)} problem"
                        f"{'s' if len(problems) != 1 else ''}:\n" + "\n".join(problems))
    used = {str(_params(layer).get("network", "")) for n in networks.values() for layer in n.layers
            if layer.type == "Unit"}
    run = {o.network for o in project.optimizers} | {e.network for e in getattr(project, "executors", [])}
    for name, network in expanded.items():  # Arguments seen on their own take their own values and go
        expanded[name] = without_arguments(network)
    out.network = expanded.pop(MAIN_NETWORK)
    out.networks = {name: n for name, n in expanded.items() if name not in used or name in run}  # units' own
    return out
