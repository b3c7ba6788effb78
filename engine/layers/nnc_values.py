"""Reading Neural Network Console property texts (.sdcproj values) into Python values.

Shared by the .sdcproj importer and the layer types' ``from_sdcproj`` hooks. NNC writes every value
as text: ``3,3`` for a shape, ``True``, ``0.1``, and ``*Name`` for "the value of property Name";
macros NNC computes itself (``*Calc...``, ``*ConvolutionPaddingSize``) stay unresolved ('*...').
"""
from __future__ import annotations

import re
from typing import Any, Dict, List, Optional


def as_float(text: Any, default: float) -> float:
    try:
        return float(str(text).strip())
    except (TypeError, ValueError):
        return default


def as_int(text: Any, default: int) -> int:
    try:
        return int(float(str(text).strip()))
    except (TypeError, ValueError, OverflowError):  # 'inf' is a float but no integer
        return default


def as_bool(text: Any, default: bool) -> bool:
    if isinstance(text, bool):
        return text
    value = str(text).strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    return default


def resolve(props: Dict[str, str], key: str) -> Optional[str]:
    """A property's value with ``*Other`` references followed; a macro NNC computes (``*Calc...``,
    ``*ConvolutionPaddingSize``) or a reference cycle is returned as written, still starting with '*'."""
    value = props.get(key)
    seen = {key}
    while value is not None and value.startswith("*"):
        ref = value[1:].strip()
        if ref not in props or ref in seen:
            return value
        seen.add(ref)
        value = props[ref]
    return value


def ints(text: str) -> List[int]:
    """'3,3' / '(3, 3)' / '3 3' -> [3, 3]."""
    return [int(float(v)) for v in re.split(r"[,\s]+", text.strip().strip("()[]")) if v != ""]


def convert_value(kind: str, text: str) -> Any:
    """An NNC property text as a value of a registry parameter kind."""
    if kind == "ints":
        return ints(text)
    if kind == "int":
        return int(float(text))
    if kind == "float":
        return float(text)
    if kind == "bool":
        return as_bool(text, False)
    return text


def to_text(value: Any) -> str:
    """A registry parameter value as NNC writes it: ``3,3`` for a shape, ``True``, ``0.1`` (the inverse of
    ``convert_value``)."""
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, (list, tuple)):
        return ",".join(to_text(v) for v in value)
    if isinstance(value, float):
        return repr(value)
    return str(value)
