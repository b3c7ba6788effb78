"""The short texts a layer shows under its name on the EDIT canvas ('16 maps · 3×3 · pad 1×1').

Pure Python so that layer modules can give their ``caption`` hooks without importing Qt; the GUI's
style module formats every node through ``caption``.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence


def fmt_dims(values: Any) -> str:
    """[16, 8, 8] -> '16×8×8'; 10 -> '10'."""
    if isinstance(values, (list, tuple)):
        return "×".join(str(v) for v in values) if values else "()"
    return str(values)


def fmt_value(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def nonzero(values: Sequence[int]) -> bool:
    return any(v != 0 for v in values)


def same(values: Any) -> str:
    """[1, 1] -> '1' (all equal), [1, 2] -> '1×2': short forms for strides and pads."""
    if isinstance(values, (list, tuple)) and values and all(v == values[0] for v in values):
        return str(values[0])
    return fmt_dims(values)


def generic(params: Mapping[str, Any], defaults: Mapping[str, Any], always: bool = False) -> str:
    """Up to three parameters that differ from their defaults (all of them when ``always``)."""
    parts = []
    for key, value in params.items():
        default = defaults.get(key)
        if isinstance(default, tuple):
            default = list(default)
        shown = list(value) if isinstance(value, tuple) else value
        if shown != default or always:
            parts.append(f"{key} {fmt_dims(shown) if isinstance(shown, list) else fmt_value(shown)}")
        if len(parts) == 3:
            break
    return " · ".join(parts)
