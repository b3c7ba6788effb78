"""What a ``search`` parameter's ``target`` names, and setting it in a copy of the project.

A target is a setting's dotted path (``optimizer.learning_rate``; any int, float or choice setting of the
schema) or a Main-network layer property, ``layers.<layer>.<param>``. The check (``engine/check/search``)
and the trials (``engine/search``) read targets through this one module.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple

from nnconsole.engine.project.model import Project
from nnconsole.engine.project.schema import BY_PATH, set_value_at, value_at

LAYER_PREFIX = "layers."
SEARCHABLE_KINDS = ("int", "float", "choice")


@dataclass(frozen=True)
class Target:
    """A resolved target: the setting (``setting`` set) or the layer and its parameter (``layer``, ``param``)."""

    text: str
    setting: str = ""
    layer: str = ""
    param: str = ""

    def kind(self) -> str:
        """The schema kind of a setting target; "" for a layer property (any number or list of numbers)."""
        return BY_PATH[self.setting].kind if self.setting else ""


class TargetError(ValueError):
    """A target that names nothing searchable; the message says what would be valid."""


def resolve_target(project: Project, text: str) -> Target:
    """The target ``text`` names in ``project``; TargetError says why when it names nothing searchable."""
    if text.startswith(LAYER_PREFIX):
        rest = text[len(LAYER_PREFIX):]
        layer, _, param = rest.rpartition(".")
        if not layer or not param:
            raise TargetError(f"'{text}' is not layers.<layer>.<property>, e.g. layers.fc1.out_shape")
        try:
            found = project.network.layer(layer)
        except KeyError:
            raise TargetError(f"the Main network has no layer '{layer}' (its layers: "
                              f"{', '.join(project.network.names())})") from None
        if param not in found.params:
            raise TargetError(f"layer '{layer}' ({found.type}) has no property '{param}' set in the project "
                              f"(its properties: {', '.join(found.params) or 'none'})")
        return Target(text, layer=layer, param=param)
    setting = BY_PATH.get(text)
    if setting is None or setting.kind not in SEARCHABLE_KINDS:
        raise TargetError(f"'{text}' is not a searchable setting: use a number or choice setting such as "
                          "optimizer.learning_rate, config.batch_size, optimizer.solver, or layers.<layer>.<property>")
    return Target(text, setting=text)


def current_value(project: Project, target: Target) -> Any:
    """The value the project holds at ``target``."""
    if target.setting:
        return value_at(project, target.setting)
    return project.network.layer(target.layer).params[target.param]


def set_target(project: Project, target: Target, value: Any) -> None:
    """Set ``target`` in ``project`` (a copy the caller owns). A number for a list-valued layer property sets
    each entry (a kernel [3, 3] given 5 becomes [5, 5])."""
    if target.setting:
        kind = target.kind()
        set_value_at(project, target.setting, int(value) if kind == "int" else float(value) if kind == "float"
                     else value)
        return
    params = project.network.layer(target.layer).params
    old = params[target.param]
    if isinstance(old, (list, tuple)) and not isinstance(value, (list, tuple)):
        value = [value] * len(old)
    params[target.param] = value


def layer_of(target: Target) -> Optional[Tuple[str, str]]:
    """(layer, property) of a layer target, None for a setting."""
    return (target.layer, target.param) if target.layer else None
