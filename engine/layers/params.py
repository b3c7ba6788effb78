"""Layer parameters: ``ParamSpec`` (name, kind, default, bounds) and the checks that turn a value from a
project file or a GUI text field into the parameter's canonical type, or say why it cannot be one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional, Sequence, Tuple

PARAM_KINDS = ("int", "float", "bool", "ints", "enum", "str")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _to_int(value: Any) -> Optional[int]:
    """An int from an int, an integral float or a numeric string; None if it is not one."""
    if _is_int(value):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            try:
                f = float(value.strip())
            except ValueError:
                return None
            return int(f) if f.is_integer() else None
    # numpy integers and the like
    if hasattr(value, "__index__") and not isinstance(value, bool):
        try:
            return int(value.__index__())
        except Exception:  # pragma: no cover - exotic types
            return None
    return None


def _bound_words(lo: Optional[float]) -> str:
    if lo is None:
        return ""
    if lo == 1:
        return "positive "
    if lo == 0:
        return "non-negative "
    return ""


@dataclass(frozen=True)
class ParamSpec:
    """One layer parameter: name, kind, default and the rule that checks a value.

    kind is one of 'int', 'float', 'bool', 'ints' (a list of ints), 'enum' (one of ``choices``)
    or 'str'. ``min``/``max`` bound numbers (and every element of 'ints'); ``min_len``/``max_len``
    bound the length of 'ints' (min_len 0 allows an empty list, which the layer documents).
    """

    name: str
    kind: str
    default: Any
    doc: str = ""
    choices: Tuple[Any, ...] = ()
    min: Optional[float] = None
    max: Optional[float] = None
    exclusive_max: bool = False
    min_len: int = 1
    max_len: Optional[int] = None
    example: Optional[Sequence[int]] = None

    def __post_init__(self) -> None:
        if self.kind not in PARAM_KINDS:
            raise ValueError(f"ParamSpec {self.name}: kind must be one of {PARAM_KINDS}, got {self.kind!r}")

    # -- messages -------------------------------------------------------------------------
    def _number_rule(self, noun: str) -> str:
        parts = []
        if self.min is not None:
            parts.append(f">= {self.min:g}")
        if self.max is not None:
            parts.append(f"{'<' if self.exclusive_max else '<='} {self.max:g}")
        return f"{noun} {' and '.join(parts)}" if parts else noun

    def _ints_rule(self) -> str:
        if self.max_len is not None and self.max_len == self.min_len:
            count = f"{self.min_len} "
        elif self.max_len is not None:
            count = f"{max(self.min_len, 1)} to {self.max_len} "
        else:
            count = ""
        words = _bound_words(self.min)
        extra = ""
        if self.min is not None and not words:
            extra = f" >= {self.min:g}"
        example = self.example if self.example is not None else (self.default or [1])
        empty = " (or empty)" if self.min_len == 0 else ""
        return (f"{self.name} must be a list of {count}{words}integers{extra}{empty} "
                f"like {list(example)}")

    def _in_range(self, v: float) -> bool:
        if self.min is not None and v < self.min:
            return False
        if self.max is not None and (v >= self.max if self.exclusive_max else v > self.max):
            return False
        return True

    # -- checking ---------------------------------------------------------------------------
    def check(self, value: Any) -> Any:
        """Coerce ``value`` to this parameter's canonical type or raise ValueError saying why.

        ints -> tuple of int; int -> int; float -> float; bool -> bool; enum/str -> str.
        Numeric strings ("3", "0.5", "3,3") are accepted because GUI fields are text.
        """
        kind = self.kind
        if kind == "int":
            v = _to_int(value)
            if v is None or not self._in_range(v):
                raise ValueError(f"{self.name} must be {self._number_rule('an integer')}, got {value!r}")
            return v
        if kind == "float":
            try:
                if isinstance(value, bool):
                    raise TypeError
                v = float(value.strip() if isinstance(value, str) else value)
            except (TypeError, ValueError):
                raise ValueError(f"{self.name} must be {self._number_rule('a number')}, got {value!r}") from None
            if math.isnan(v) or not self._in_range(v):
                raise ValueError(f"{self.name} must be {self._number_rule('a number')}, got {value!r}")
            return v
        if kind == "bool":
            if isinstance(value, bool):
                return value
            if _is_int(value) and value in (0, 1):
                return bool(value)
            if isinstance(value, str) and value.strip().lower() in ("true", "false", "yes", "no", "1", "0"):
                return value.strip().lower() in ("true", "yes", "1")
            raise ValueError(f"{self.name} must be true or false, got {value!r}")
        if kind == "ints":
            items: Any = value
            if isinstance(value, str):
                text = value.strip().strip("[]()")
                items = [s for s in text.replace(";", ",").replace(" ", ",").split(",") if s != ""]
            elif _to_int(value) is not None and not isinstance(value, (list, tuple)):
                items = [value]
            if not isinstance(items, (list, tuple)):
                raise ValueError(f"{self._ints_rule()}, got {value!r}")
            out = []
            for item in items:
                v = _to_int(item)
                if v is None or not self._in_range(v):
                    raise ValueError(f"{self._ints_rule()}, got {value!r}")
                out.append(v)
            if len(out) < self.min_len or (self.max_len is not None and len(out) > self.max_len):
                raise ValueError(f"{self._ints_rule()}, got {value!r}")
            return tuple(out)
        if kind == "enum":
            if value in self.choices:
                return value
            if isinstance(value, str):
                for c in self.choices:
                    if isinstance(c, str) and c.lower() == value.strip().lower():
                        return c
            raise ValueError(f"{self.name} must be one of {', '.join(map(str, self.choices))}; got {value!r}")
        # str
        if value is None:
            return ""
        if not isinstance(value, str):
            raise ValueError(f"{self.name} must be text, got {value!r}")
        return value
