"""Layer properties marked searched (NNC's per-property Search flag) as ``search`` parameters.

A layer's ``search`` mapping (``model.Layer.search``) marks a property that ``nnconsole search`` varies, with its
range, as if the project's ``search`` section listed it: ``layers.<layer>.<property>`` for the Main network,
``networks.<network>.layers.<layer>.<property>`` for another (an Argument of the network a Unit runs). An
Argument whose own ``search`` parameter (NNC's Argument property ``Search``) is true has its ``value`` searched
even without a range: NNC's project file keeps only that flag, so the range is ``default_range`` of its value.
The check (``engine/check/search``), the trials (``engine/search/space``), the importer, the EDIT tab and the
CONFIG tab's Search section read the flags through this one module.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Optional

from nnconsole.engine.project.model import MAIN_NETWORK, Layer, Project, Search, SearchParam, SearchRange
from nnconsole.engine.project.search_targets import argument_value, layer_target

ARGUMENT_VALUE = "value"  # the property an Argument's Search flag searches
SIZE_DOWN, SIZE_UP = 4, 2  # a whole number's default range: x1/4 to x2 (the ChangeSize rule's factors)
SPAN = 10.0  # a positive real number's default range: /10 to x10, log-uniform


@dataclass
class FlaggedProperty:
    """One searched property: where its flag is in the file (``path``), its target and the parameter it makes
    (None with ``why`` when an Argument's Search flag has no range and its value gives none)."""

    path: str
    target: str
    network: str
    layer: str
    prop: str
    param: Optional[SearchParam]
    why: str = ""


def default_range(value: Any) -> Optional[SearchRange]:
    """The range a property is searched over when none is given, from its present ``value``: a whole number
    (or each entry of a list of them) from a quarter of it to twice it, a truth value either way, a positive
    real number log-uniform from a tenth of it to ten times it; None for anything else (text, zero, mixed)."""
    if isinstance(value, bool):
        return SearchRange(kind="choice", choices=[True, False])
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, int) and not isinstance(v, bool)
                                                         for v in value):
        value = max(value)
    if isinstance(value, int) and value >= 1:
        return SearchRange(kind="int", low=max(1, value // SIZE_DOWN), high=max(2, value * SIZE_UP))
    if isinstance(value, float) and value > 0:
        return SearchRange(kind="log_float", low=value / SPAN, high=value * SPAN)
    return None


def property_value(layer: Layer, prop: str) -> Any:
    """The value of ``prop`` of ``layer`` as searched: an Argument's value text read as what it holds."""
    value = layer.params.get(prop)
    return argument_value(value) if layer.type == "Argument" and prop == ARGUMENT_VALUE else value


def argument_flag(layer: Layer) -> bool:
    """True for an Argument whose NNC Search flag (its ``search`` parameter) is on."""
    return layer.type == "Argument" and layer.params.get("search") in (True, "True", "true")


def searched_props(layer: Layer) -> List[str]:
    """The properties of ``layer`` marked searched, in the file's order (an Argument's flagged value last)."""
    props = list(layer.search)
    if argument_flag(layer) and ARGUMENT_VALUE not in props:
        props.append(ARGUMENT_VALUE)
    return props


def flagged_properties(project: Project) -> List[FlaggedProperty]:
    """Every layer property of every network marked searched, in network and layer order."""
    out: List[FlaggedProperty] = []
    networks = [(MAIN_NETWORK, "network", project.network)]
    networks += [(name, f"networks.{name}", net) for name, net in project.networks.items()]
    for net_name, net_path, network in networks:
        for i, layer in enumerate(network.layers):
            for prop in searched_props(layer):
                target = layer_target(layer.name, prop, net_name)
                where = f"{net_path}.layers[{i}]"
                given = layer.search.get(prop)
                if given is not None:
                    out.append(FlaggedProperty(f"{where}.search.{prop}", target, net_name, layer.name, prop,
                                               given.as_param(target)))
                    continue
                derived = default_range(property_value(layer, prop))
                out.append(FlaggedProperty(
                    f"{where}.params.search", target, net_name, layer.name, prop,
                    derived.as_param(target) if derived else None,
                    "" if derived else f"Argument '{layer.name}' is searched (search: true) but its value "
                    f"{layer.params.get(ARGUMENT_VALUE)!r} gives no range"))
    return out


def searched_params(project: Project, search: Optional[Search] = None) -> List[SearchParam]:
    """What ``nnconsole search`` varies: the ``search`` section's params (``search``, else the project's), then
    every flagged property's."""
    search = search if search is not None else project.search
    section = list(search.params) if search is not None else []
    return section + [f.param for f in flagged_properties(project) if f.param is not None]


def has_flags(project: Project) -> bool:
    """True when some layer property of the project is marked searched."""
    return bool(flagged_properties(project))


def give_argument_ranges(project: Project) -> List[str]:
    """Give each Argument whose Search flag is on and that has no range its ``default_range`` (written into its
    ``search`` mapping, so the file shows and the user can edit it); the names of flagged Arguments whose value
    gives no range (text, a file), which stay unsearched until the user gives one."""
    left: List[str] = []
    for network in [project.network, *project.networks.values()]:
        for layer in network.layers:
            if not argument_flag(layer) or ARGUMENT_VALUE in layer.search:
                continue
            derived = default_range(property_value(layer, ARGUMENT_VALUE))
            if derived is None:
                left.append(layer.name)
            else:
                layer.search[ARGUMENT_VALUE] = derived
    return left
