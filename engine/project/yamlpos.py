"""Safe YAML parsing that remembers the line of every key, so errors can point at the file line."""
from __future__ import annotations

from typing import Any, Dict, Tuple

import yaml

PathKey = Tuple[Any, ...]


def format_path(path: PathKey) -> str:
    """("network", "layers", 3, "type") -> "network.layers[3].type"."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def parse_with_lines(text: str) -> Tuple[Any, Dict[PathKey, int]]:
    """Parse YAML safely (no tags that construct objects) and return (data, {path: 1-based line}).

    Raises yaml.YAMLError on syntax errors (with ``problem_mark`` giving the line).
    """
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    lines: Dict[PathKey, int] = {}
    if node is None:
        return None, lines
    data = _convert(node, (), lines)
    return data, lines


_SAFE_COLLECTIONS = {"tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"}


def _convert(node: yaml.Node, path: PathKey, lines: Dict[PathKey, int]) -> Any:
    lines[path] = node.start_mark.line + 1
    if not isinstance(node, yaml.ScalarNode) and node.tag not in _SAFE_COLLECTIONS:
        raise yaml.constructor.ConstructorError(None, None, f"tag {node.tag!r} is not allowed in a project file",
                                                node.start_mark)
    if isinstance(node, yaml.MappingNode):
        result: Dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = _scalar(key_node)
            if isinstance(key, (list, dict)):
                raise yaml.constructor.ConstructorError(
                    None, None, "mapping keys must be plain scalars", key_node.start_mark)
            child = path + (key,)
            result[key] = _convert(value_node, child, lines)
            lines[child] = key_node.start_mark.line + 1
        return result
    if isinstance(node, yaml.SequenceNode):
        return [_convert(item, path + (i,), lines) for i, item in enumerate(node.value)]
    return _scalar(node)


def _scalar(node: yaml.Node) -> Any:
    """Construct a scalar with SafeLoader's rules (ints, floats, bools, nulls, strings only)."""
    if not isinstance(node, yaml.ScalarNode):
        loader = yaml.SafeLoader("")
        return loader.construct_object(node, deep=True)
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_object(node)
    finally:
        loader.dispose()


def line_of(lines: Dict[PathKey, int], path: PathKey) -> int | None:
    """The line of ``path`` or of its nearest ancestor that has one."""
    path = tuple(path)
    while True:
        if path in lines:
            return lines[path]
        if not path:
            return None
        path = path[:-1]
