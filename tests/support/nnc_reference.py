"""NNC's own layer definitions (tests/data/nnc_reference, copied from Neural Network Console's
desktop settings under the Apache License 2.0, see the LICENSE there), read for tests that check the
layer registry against them: property names, types and default values per layer type.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Dict, List, Optional

from .paths import DATA

LAYER_COMPONENT = os.path.join(DATA, "nnc_reference", "layer_component")  # one folder per NNC category


@dataclass
class NncProperty:
    name: str
    type: str = ""
    value: str = ""
    editable: bool = True
    argument: str = ""  # nnabla argument, e.g. 'leaky_relu_param.alpha' (flags such as -n dropped)


@dataclass
class NncLayer:
    name: str
    category: str
    function: str = ""  # nnabla function (FunctionName), '' when NNC names none
    properties: Dict[str, NncProperty] = field(default_factory=dict)


def sections(text: str) -> Dict[str, List[str]]:
    """An NNC settings text as ``[section]`` -> its lines (blank lines and ``;`` comments dropped)."""
    out: Dict[str, List[str]] = {}
    current: Optional[List[str]] = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(";"):
            continue
        m = re.match(r"^\[(.+)\]$", line)
        if m:
            current = out.setdefault(m.group(1), [])
        elif current is not None:
            current.append(line)
    return out


def _keys(lines: List[str]) -> Dict[str, str]:
    return {k.strip(): v.strip() for k, _, v in (line.partition("=") for line in lines if "=" in line)}


@lru_cache(maxsize=None)
def palette() -> Dict[str, List[str]]:
    """NNC's palette: category -> layer types (layer_component.txt)."""
    found = sections(open(os.path.join(LAYER_COMPONENT, "layer_component.txt"), encoding="utf-8").read())
    return {c: list(found.get(c, [])) for c in found.get("Category", [])}


@lru_cache(maxsize=None)
def layer(name: str) -> Optional[NncLayer]:
    """NNC's definition of a layer type, or None when the reference has no file for it."""
    for category in os.listdir(LAYER_COMPONENT):
        path = os.path.join(LAYER_COMPONENT, category, f"{name}.txt")
        if os.path.isfile(path):
            break
    else:
        return None
    found = sections(open(path, encoding="utf-8").read())
    result = NncLayer(name=name, category=category, function=_keys(found.get("Global", [])).get("FunctionName", ""))
    for prop in found.get("Property", []):
        keys = _keys(found.get(f"Property_{prop}", []))
        result.properties[prop] = NncProperty(
            name=prop, type=keys.get("Type", ""), value=keys.get("Value", ""),
            editable=keys.get("Editable", "True").lower() != "false",
            argument=keys.get("ArgumentName", "").split(" ")[0])
    return result
