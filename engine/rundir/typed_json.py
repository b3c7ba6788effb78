"""Typed reading of the small JSON files nnconsole keeps in a run directory (``status.json``,
``plan.json``, ``launch.json``, a checkpoint's ``ckpt-<it>.json``).

They are written by nnconsole, but a crash, a full disk or a hand edit can leave them truncated or
with values of the wrong type. Every field is checked against the dataclass it fills, so a damaged
file is reported as ``file: field 'x': expected ..., got ...`` (RunFileError) instead of failing
later, somewhere else, with a traceback.
"""
from __future__ import annotations

import dataclasses
import enum
import typing
from typing import Any, Optional, Type, TypeVar

from nnconsole.engine.errors import NnconsoleError
from nnconsole.engine.rundir import safe_json

T = TypeVar("T")
MAX_RUN_JSON_BYTES = 4 << 20  # these files are a few hundred bytes


class RunFileError(NnconsoleError, ValueError):
    """A run directory's JSON file that is damaged; the message names the file, the field and a fix."""


_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}


def _fits(tp: Any, value: Any) -> bool:
    origin = typing.get_origin(tp)
    if origin is typing.Union:
        return any(_fits(arg, value) for arg in typing.get_args(tp))
    if tp is type(None):
        return value is None
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if tp is str:
        return isinstance(value, str)
    if isinstance(tp, type) and issubclass(tp, enum.Enum) and issubclass(tp, str):
        return isinstance(value, str)  # a word the enum does not know is its _missing_'s business (RunStatus)
    if origin in (dict, typing.Dict):
        key_t, val_t = typing.get_args(tp) or (Any, Any)
        return isinstance(value, dict) and all(_fits(key_t, k) and _fits(val_t, v) for k, v in value.items())
    if origin in (list, typing.List):
        (item_t,) = typing.get_args(tp) or (Any,)
        return isinstance(value, list) and all(_fits(item_t, v) for v in value)
    return tp is Any


def _converted(tp: Any, value: Any) -> Any:
    """A value that fits ``tp`` as the field holds it: a float for a whole number JSON gave (also where the
    field may be null), a member for an enum's word."""
    if typing.get_origin(tp) is typing.Union and value is not None:
        others = [arg for arg in typing.get_args(tp) if arg is not type(None)]
        tp = others[0] if len(others) == 1 else tp
    if tp is float:
        return float(value)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return tp(value)
    return value


def _describe(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin is typing.Union:
        return " or ".join("null" if a is type(None) else _describe(a) for a in typing.get_args(tp))
    if origin in (dict, typing.Dict):
        return "a mapping of names to strings"
    if origin in (list, typing.List):
        return "a list"
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return "one of " + ", ".join(str(m.value) for m in tp)
    return _NAMES.get(tp, getattr(tp, "__name__", str(tp)))


def read_run_json(path: str, cls: Type[T], fix: str, required: bool = True) -> Optional[T]:
    """The dataclass ``cls`` filled from the JSON object in ``path``; keys ``cls`` lacks are ignored.

    A missing file returns None unless ``required``. Anything else wrong (not JSON, not an object,
    a value of the wrong type, a required field missing) raises RunFileError with ``fix`` appended.
    """
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_RUN_JSON_BYTES + 1)
    except FileNotFoundError:
        if required:
            raise RunFileError(f"{path}: file missing; {fix}") from None
        return None
    except OSError as exc:
        raise RunFileError(f"{path}: cannot be read ({exc.strerror}); {fix}") from None
    if len(raw) > MAX_RUN_JSON_BYTES:
        raise RunFileError(f"{path}: larger than {MAX_RUN_JSON_BYTES >> 20} MiB, not a file nnconsole wrote; {fix}")
    try:
        data = safe_json.loads(raw)
    except ValueError as exc:  # truncated, NUL bytes after a power loss, not UTF-8, nested 100,000 deep
        raise RunFileError(f"{path}: not valid JSON ({exc}); the file is damaged: {fix}") from None
    if not isinstance(data, dict):
        raise RunFileError(f"{path}: expected a JSON object, got {type(data).__name__}; {fix}")
    hints = typing.get_type_hints(cls)
    values = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:  # type: ignore[misc]
                raise RunFileError(f"{path}: field '{f.name}' is missing; {fix}")
            continue
        value = data[f.name]
        if not _fits(hints[f.name], value):
            shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
            raise RunFileError(f"{path}: field '{f.name}' should be {_describe(hints[f.name])}, got {shown}; {fix}")
        values[f.name] = _converted(hints[f.name], value)
    return cls(**values)
