"""Convert between plain dicts (parsed YAML) and the project dataclasses, collecting type problems.

Unknown keys and wrong types become Problems with their YAML path instead of exceptions, so a
user sees every mistake in one go.
"""
from __future__ import annotations

import dataclasses
import difflib
import typing
from typing import Any, Dict, List, Tuple

from nnconsole.engine.project.errors import Problem
from nnconsole.engine.project.model import Layer, Network, Project
from nnconsole.engine.project.yamlpos import format_path

PathKey = Tuple[Any, ...]
# Keys of older formats that a file of the current format may still carry by habit.
RENAMED_KEYS = {"monitor_interval": "format 3 splits it in two: 'log_interval' (iterations between training "
                "records) and 'validation_interval' (epochs between validations, NNC's Monitor Interval)"}


def project_from_dict(data: Dict[str, Any], problems: List[Problem]) -> Project:
    """Build a Project from parsed YAML; type problems are appended to ``problems``."""
    return _to_dataclass(Project, data, (), problems)


def project_to_dict(project: Project) -> Dict[str, Any]:
    """The YAML-ready dict of a project: field order kept, defaults included, no runtime fields."""
    data = _from_value(project)
    data.pop("path", None)
    for key in ("networks", "optimizers", "executors", "search"):  # a one-network project's file stays as it was
        if not data.get(key):
            data.pop(key, None)
    ordered = {"format_version": data.pop("format_version")}
    ordered.update(data)
    return ordered


def _from_value(value: Any) -> Any:
    if dataclasses.is_dataclass(value):
        out = {}
        for f in dataclasses.fields(value):
            v = getattr(value, f.name)
            if isinstance(value, Layer) and not v and f.name in ("initializers", "lr_multipliers", "position",
                                                                 "parameter_scope", "search"):
                continue  # keep layer entries short: empty extras are omitted
            if isinstance(value, Network) and f.name == "comments" and not v:
                continue  # a network without canvas notes is written as before
            out[f.name] = _from_value(v)
        return out
    if isinstance(value, (list, tuple)):
        return [_from_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _from_value(v) for k, v in value.items()}
    return value


def _convert(tp: Any, value: Any, path: PathKey, problems: List[Problem]) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return value
    if origin is typing.Union:  # Optional[X]
        if value is None:
            return None
        inner = [a for a in args if a is not type(None)]
        return _convert(inner[0], value, path, problems)
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            problems.append(Problem(format_path(path), f"expected a mapping, got {type(value).__name__}"))
            return tp() if _constructible(tp) else None
        return _to_dataclass(tp, value, path, problems)
    if origin in (list, List, tuple, Tuple):
        if not isinstance(value, (list, tuple)):
            problems.append(Problem(format_path(path), f"expected a list, got {value!r}"))
            return []
        item_types = args or (Any,)
        if origin in (tuple, Tuple) and len(item_types) > 1 and item_types[-1] is not Ellipsis:
            if len(value) != len(item_types):
                problems.append(Problem(format_path(path), f"expected {len(item_types)} values, got {len(value)}"))
                return None
            return tuple(_convert(t, v, path + (i,), problems) for i, (t, v) in enumerate(zip(item_types, value)))
        return [_convert(item_types[0], v, path + (i,), problems) for i, v in enumerate(value)]
    if origin in (dict, Dict):
        if value is None:
            return {}
        if not isinstance(value, dict):
            problems.append(Problem(format_path(path), f"expected a mapping, got {value!r}"))
            return {}
        key_t, val_t = args or (str, Any)
        return {str(k): _convert(val_t, v, path + (k,), problems) for k, v in value.items()}
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            problems.append(Problem(format_path(path), f"expected a number, got {value!r}"))
            return 0.0
        return float(value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                return int(value)
            problems.append(Problem(format_path(path), f"expected an integer, got {value!r}"))
            return 0
        return value
    if tp is bool:
        if not isinstance(value, bool):
            problems.append(Problem(format_path(path), f"expected true or false, got {value!r}"))
            return False
        return value
    if tp is str:
        if value is None:
            return ""
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            problems.append(Problem(format_path(path), f"expected a string, got {value!r}"))
            return ""
        return str(value)
    return value


def _constructible(tp: Any) -> bool:
    return all(f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
               for f in dataclasses.fields(tp))


def _to_dataclass(tp: Any, data: Dict[str, Any], path: PathKey, problems: List[Problem]) -> Any:
    hints = typing.get_type_hints(tp)
    fields = {f.name: f for f in dataclasses.fields(tp) if f.name != "path"}
    kwargs: Dict[str, Any] = {}
    for key, value in data.items():
        if key not in fields:
            close = difflib.get_close_matches(str(key), list(fields), n=1)
            hint = f"did you mean '{close[0]}'?" if close else "valid keys: " + ", ".join(fields)
            hint = RENAMED_KEYS.get(str(key), hint) if path == ("config",) else hint
            problems.append(Problem(format_path(path + (key,)), f"unknown key '{key}'", fix=hint))
            continue
        kwargs[key] = _convert(hints[key], value, path + (key,), problems)
    missing = [f.name for f in fields.values()
               if f.name not in kwargs and f.default is dataclasses.MISSING
               and f.default_factory is dataclasses.MISSING]  # type: ignore[misc]
    for name in missing:
        problems.append(Problem(format_path(path + (name,)), f"'{name}' is required", fix=f"add '{name}:' here"))
        kwargs[name] = "" if hints[name] is str else None
    return tp(**kwargs)
