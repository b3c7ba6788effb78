"""Copy and paste of layers: a JSON payload on the clipboard and the renaming rules for pasting.

Pasted layers get fresh unique names; connections between pasted layers are kept, connections to
layers outside the copied set are dropped (as NNC does). A named parameter scope is kept, so a pasted
copy of a layer whose scope was set (``disc``) shares that layer's weights, as NNC's ParameterScope
property does when copied; a layer on the default scope (its own name) gets its own weights under its
new name. Properties marked searched (NNC's Search flag) stay marked, with their ranges.
"""
from __future__ import annotations

import dataclasses
import json
import re
from typing import Any, Dict, Iterable, List, Sequence

from nnconsole.engine.project.model import Initializer, Layer, SearchRange
from nnconsole.engine.rundir import safe_json

MIME_TYPE = "application/x-nnconsole-layers"


def layers_to_json(layers: Sequence[Layer]) -> str:
    """The clipboard text of some layers (plain JSON, readable when pasted into a text editor)."""
    items = []
    for layer in layers:
        items.append({
            "name": layer.name, "type": layer.type, "inputs": list(layer.inputs),
            "params": {k: list(v) if isinstance(v, tuple) else v for k, v in layer.params.items()},
            "initializers": {k: {"type": i.type, "multiplier": i.multiplier, "value": i.value}
                             for k, i in layer.initializers.items()},
            "lr_multipliers": dict(layer.lr_multipliers),
            "position": list(layer.position) if layer.position is not None else None,
            "parameter_scope": layer.parameter_scope,
            "search": {k: dataclasses.asdict(r) for k, r in layer.search.items()},  # searched properties stay so
        })
    return json.dumps({"nnconsole_layers": items}, indent=1)


def layers_from_json(text: str) -> List[Layer]:
    """Layers from clipboard text; ValueError when the text is not an nnconsole layer payload."""
    try:
        data = safe_json.loads(text)  # pasted text: a 100,000-deep list is damaged text, not a RecursionError
        items = data["nnconsole_layers"]
        layers = []
        for item in items:
            position = item.get("position")
            layers.append(Layer(
                name=str(item["name"]), type=str(item["type"]), inputs=[str(s) for s in item.get("inputs", [])],
                params=dict(item.get("params", {})),
                initializers={k: Initializer(type=str(v.get("type", "NormalAffineGlorot")),
                                             multiplier=float(v.get("multiplier", 1.0)),
                                             value=float(v.get("value", 0.0)))
                              for k, v in item.get("initializers", {}).items()},
                lr_multipliers={k: float(v) for k, v in item.get("lr_multipliers", {}).items()},
                position=(float(position[0]), float(position[1])) if position else None,
                parameter_scope=str(item.get("parameter_scope") or ""),
                search={str(k): SearchRange(kind=str(r.get("kind", "int")), low=float(r.get("low", 0.0)),
                                            high=float(r.get("high", 0.0)), step=int(r.get("step", 1)),
                                            choices=list(r.get("choices", [])))
                        for k, r in (item.get("search") or {}).items()}))
        return layers
    except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
        raise ValueError(f"the clipboard does not hold nnconsole layers ({exc})") from None


def unique_name(base: str, taken: Iterable[str]) -> str:
    """NNC-style names: ``base`` if free, else ``base_2``, ``base_3`` ... (a ``_N`` suffix is replaced)."""
    taken = set(taken)
    if base not in taken:
        return base
    stem = re.sub(r"_\d+$", "", base) or base
    n = 2
    while f"{stem}_{n}" in taken:
        n += 1
    return f"{stem}_{n}"


def rename_for_paste(layers: Sequence[Layer], taken: Iterable[str]) -> List[Layer]:
    """Copies of ``layers`` with unique names; inputs point to the renamed copies or are dropped."""
    used = set(taken)
    mapping: Dict[str, str] = {}
    for layer in layers:
        mapping[layer.name] = unique_name(layer.name, used)
        used.add(mapping[layer.name])
    out = []
    for layer in layers:
        out.append(Layer(name=mapping[layer.name], type=layer.type,
                         inputs=[mapping[s] for s in layer.inputs if s in mapping],
                         params=dict(layer.params), initializers=dict(layer.initializers),
                         lr_multipliers=dict(layer.lr_multipliers), position=layer.position,
                         parameter_scope=layer.parameter_scope, search=dict(layer.search)))
    return out


def plain(value: Any) -> Any:
    """Tuples as lists, recursively (the form YAML gives back, so saved and loaded projects compare equal)."""
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value
