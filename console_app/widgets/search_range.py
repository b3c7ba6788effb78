"""A searched property's range as one line of text, as the EDIT panel's Search rows and CONFIG's Search section
show it: ``16..128`` (whole numbers, or real numbers when the property holds them), ``16..128 step 16``,
``1e-05..0.1 log`` (log-uniform) or ``4, 8, 32`` (a choice; ``true, false`` for a truth value)."""
from __future__ import annotations

import math
import re
from typing import Any, List

from nnconsole.engine.project.model import SearchRange

_SPAN = re.compile(r"^\s*(\S+?)\s*\.\.\s*(\S+?)\s*(?:step\s+(\S+))?\s*(log)?\s*$", re.IGNORECASE)


def _entry(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + " ".join(_entry(v) for v in value) + "]"
    return f"{value:g}" if isinstance(value, float) else str(value)


def range_text(r: SearchRange) -> str:
    """``r`` as the one line ``parse_range`` reads back."""
    if r.kind == "choice":
        return ", ".join(_entry(c) for c in r.choices)
    span = f"{r.low:g}..{r.high:g}"
    if r.kind == "int" and r.step > 1:
        span += f" step {r.step}"
    return span + (" log" if r.kind == "log_float" else "")


def _choice(text: str) -> Any:
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _number(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{what} '{text}' is not a number") from None
    if not math.isfinite(value):
        raise ValueError(f"{what} must be a finite number, got '{text}'")
    return value


def parse_range(text: str, whole: bool) -> SearchRange:
    """The range a line describes; ``whole``: the property holds whole numbers (``a..b`` is then ``int``).
    ValueError says what is wrong (min above max, a bound that is not a number, a log range from 0 ...)."""
    match = _SPAN.match(text)
    if match is None:
        entries: List[Any] = [_choice(p.strip()) for p in text.split(",") if p.strip()]
        if not entries:
            raise ValueError("give a range 'min..max' (e.g. 16..128, 1e-4..1e-1 log) or choices '16, 32, 64'")
        if ".." in text:
            raise ValueError(f"'{text.strip()}' is not 'min..max' (write e.g. 16..128 or 16..128 step 16)")
        return SearchRange(kind="choice", choices=entries)
    low, high = _number(match.group(1), "min"), _number(match.group(2), "max")
    log = bool(match.group(4))
    if low > high:
        raise ValueError(f"min {low:g} is above max {high:g}")
    if log:
        if low <= 0:
            raise ValueError(f"a log range starts above 0, got min {low:g}")
        return SearchRange(kind="log_float", low=low, high=high)
    step = 1
    if match.group(3) is not None:
        step_value = _number(match.group(3), "step")
        if not step_value.is_integer() or step_value < 1:
            raise ValueError(f"step must be a whole number >= 1, got '{match.group(3)}'")
        step = int(step_value)
    if whole:
        for what, value in (("min", low), ("max", high)):
            if not value.is_integer():
                raise ValueError(f"{what} must be a whole number (the property holds whole numbers), got {value:g}")
        return SearchRange(kind="int", low=low, high=high, step=step)
    if step != 1:
        raise ValueError("a step applies to whole numbers only")
    return SearchRange(kind="float", low=low, high=high)
