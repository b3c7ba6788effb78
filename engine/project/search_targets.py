"""What a ``search`` parameter's ``target`` names, and setting it in a copy of the project.

A target is a setting's dotted path (``optimizer.learning_rate``; any int, float or choice setting of the
schema), a Main-network layer property, ``layers.<layer>.<param>``, or a property of a layer of another
network, ``networks.<network>.layers.<layer>.<param>`` (an Argument of a unit's network). An Argument's
``value`` is text read by its NNC Type: here it is the number, list or truth value the text holds, and a
drawn value is written back as that text. The check (``engine/check/search``) and the trials
(``engine/search``) read targets through this one module.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple

from nnconsole.engine.project.model import MAIN_NETWORK, Layer, Network, Project
from nnconsole.engine.project.schema import BY_PATH, set_value_at, value_at

LAYER_PREFIX = "layers."
NETWORK_PREFIX = "networks."
SEARCHABLE_KINDS = ("int", "float", "choice")


@dataclass(frozen=True)
class Target:
    """A resolved target: the setting (``setting`` set) or the layer and its parameter (``layer``, ``param``)."""

    text: str
    setting: str = ""
    layer: str = ""
    param: str = ""
    network: str = ""  # "" = Main

    def kind(self) -> str:
        """The schema kind of a setting target; "" for a layer property (any number or list of numbers)."""
        return BY_PATH[self.setting].kind if self.setting else ""


class TargetError(ValueError):
    """A target that names nothing searchable; the message says what would be valid."""


def layer_target(layer: str, param: str, network: str = "") -> str:
    """The target text of property ``param`` of ``layer`` in ``network`` ("" or Main: the Main network)."""
    if network and network != MAIN_NETWORK:
        return f"{NETWORK_PREFIX}{network}.{LAYER_PREFIX}{layer}.{param}"
    return f"{LAYER_PREFIX}{layer}.{param}"


def network_of(project: Project, name: str) -> Network:
    """The network ``name`` ("" = Main) of ``project``; KeyError when it has none so named."""
    return project.network if name in ("", MAIN_NETWORK) else project.networks[name]


def resolve_target(project: Project, text: str) -> Target:
    """The target ``text`` names in ``project``; TargetError says why when it names nothing searchable."""
    network = ""
    rest = text
    if text.startswith(NETWORK_PREFIX):
        network, sep, rest = text[len(NETWORK_PREFIX):].partition("." + LAYER_PREFIX)
        if not sep or not network:
            raise TargetError(f"'{text}' is not networks.<network>.layers.<layer>.<property>")
        rest = LAYER_PREFIX + rest
        if network != MAIN_NETWORK and network not in project.networks:
            raise TargetError(f"the project has no network '{network}' (its networks: "
                              f"{', '.join([MAIN_NETWORK, *project.networks])})")
    if rest.startswith(LAYER_PREFIX):
        layer, _, param = rest[len(LAYER_PREFIX):].rpartition(".")
        if not layer or not param:
            raise TargetError(f"'{text}' is not layers.<layer>.<property>, e.g. layers.fc1.out_shape")
        where = network or MAIN_NETWORK
        try:
            found = network_of(project, network).layer(layer)
        except KeyError:
            raise TargetError(f"the {where} network has no layer '{layer}' (its layers: "
                              f"{', '.join(network_of(project, network).names())})") from None
        if param not in found.params:
            raise TargetError(f"layer '{layer}' ({found.type}) has no property '{param}' set in the project "
                              f"(its properties: {', '.join(found.params) or 'none'})")
        return Target(text, layer=layer, param=param, network="" if where == MAIN_NETWORK else where)
    setting = BY_PATH.get(text)
    if setting is None or setting.kind not in SEARCHABLE_KINDS:
        raise TargetError(f"'{text}' is not a searchable setting: use a number or choice setting such as "
                          "optimizer.learning_rate, config.batch_size, optimizer.solver, or layers.<layer>.<property>")
    return Target(text, setting=text)


def _is_argument_value(layer: Layer, param: str) -> bool:
    return layer.type == "Argument" and param == "value"


def argument_value(text: Any) -> Any:
    """What an Argument's value text holds: True/False, an int, a list of ints ('3,3'), a float, or the text."""
    raw = str(text).strip()
    if raw.lower() in ("true", "false"):
        return raw.lower() == "true"
    parts = [p.strip() for p in raw.split(",")]
    try:
        ints = [int(p) for p in parts]
        return ints[0] if len(ints) == 1 else ints
    except ValueError:
        pass
    try:
        return float(raw)
    except ValueError:
        return raw


def argument_text(value: Any, old_text: Any = "") -> str:
    """``value`` as an Argument's text; a number for a list-valued text ('3,3') sets each entry ('5,5')."""
    old = argument_value(old_text)
    if isinstance(old, list) and not isinstance(value, (list, tuple)):
        value = [value] * len(old)
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, (list, tuple)):
        return ",".join(argument_text(v) for v in value)
    if isinstance(value, float) and value.is_integer() and isinstance(old, int) and not isinstance(old, bool):
        return str(int(value))
    return str(value)


def current_value(project: Project, target: Target) -> Any:
    """The value the project holds at ``target``."""
    if target.setting:
        return value_at(project, target.setting)
    layer = network_of(project, target.network).layer(target.layer)
    value = layer.params[target.param]
    return argument_value(value) if _is_argument_value(layer, target.param) else value


def set_target(project: Project, target: Target, value: Any) -> None:
    """Set ``target`` in ``project`` (a copy the caller owns). A number for a list-valued layer property sets
    each entry (a kernel [3, 3] given 5 becomes [5, 5])."""
    if target.setting:
        kind = target.kind()
        set_value_at(project, target.setting, int(value) if kind == "int" else float(value) if kind == "float"
                     else value)
        return
    layer = network_of(project, target.network).layer(target.layer)
    params = layer.params
    old = params[target.param]
    if _is_argument_value(layer, target.param):
        params[target.param] = argument_text(value, old)
        return
    if isinstance(old, (list, tuple)) and not isinstance(value, (list, tuple)):
        value = [value] * len(old)
    params[target.param] = value


def layer_of(target: Target) -> Optional[Tuple[str, str]]:
    """(layer, property) of a layer target, None for a setting."""
    return (target.layer, target.param) if target.layer else None
