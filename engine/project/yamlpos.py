"""Safe YAML parsing that remembers the line of every key, so errors can point at the file line.

Only plain scalars, mappings and sequences are built (no tags that construct objects). Duplicate
keys, aliases that refer to themselves, scalars PyYAML cannot build (a 30 February), and files
beyond the bounds below (length, values written, values after aliases, nesting) are refused as
YAML errors with a line, so a hostile or broken file cannot hang, exhaust memory or crash the
loader. The bounds on values and nesting are checked by a streaming scan before any node is built.
"""
from __future__ import annotations

from typing import Any, Dict, Set, Tuple

import yaml

PathKey = Tuple[Any, ...]

# A real project has a few hundred to a few thousand values (a 500-layer imported network about
# 10,000). These bound the work and memory a hostile file can cause before it is refused:
MAX_YAML_CHARS = 16 << 20  # characters of text (a large network is well under 1 MiB)
MAX_NODES = 50_000  # scalars, lists and mappings written in the file
MAX_VALUES = 200_000  # values after aliases ('*name') are expanded
MAX_DEPTH = 64  # nested lists and mappings (a project nests about 6 deep)


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

    Raises yaml.YAMLError on syntax errors (with ``problem_mark`` giving the line), on duplicate
    keys, on recursive aliases, on values that cannot be built (ValueProblem) and beyond the bounds
    above (LimitError). Both of those carry a ``fix`` for the message.
    """
    if len(text) > MAX_YAML_CHARS:
        raise LimitError(None, None, f"the text is longer than {MAX_YAML_CHARS >> 20} Mi characters, far more "
                         "than any project file", None)
    _count_nodes_quickly(text)
    node = yaml.compose(text, Loader=_CountingLoader)
    lines: Dict[PathKey, int] = {}
    if node is None:
        return None, lines
    builder = _Builder(lines)
    try:
        data = builder.convert(node, (), set())
    finally:
        builder.loader.dispose()
    return data, lines


class LimitError(yaml.composer.ComposerError):
    """A file beyond the size bounds above; ``fix`` tells the user what to do."""

    fix = "check that this is a project .yaml file; datasets belong in CSV files next to it"


class ValueProblem(yaml.constructor.ConstructorError):
    """A scalar that looks like a number, date or tagged value but cannot be built as one."""

    fix = "write a valid value, or put it in quotes to keep it as text"


def _too_deep(mark: yaml.Mark) -> LimitError:
    error = LimitError(None, None, f"the values are nested too deeply (more than {MAX_DEPTH} "
                       "levels)", mark)
    error.fix = "a project file nests mappings and lists a few levels deep; check the brackets and the indentation"
    return error


def _too_many_nodes(mark: yaml.Mark) -> LimitError:
    return LimitError(None, None, f"the file holds more than {MAX_NODES:,} values, far more than any project "
                      "file (it is refused before it is built)", mark)


def _count_nodes_quickly(text: str) -> None:
    """Refuse a file with more than MAX_NODES nodes from a streaming parse (libyaml's when present,
    about a second per million values), before any node is built. Syntax errors are left to the
    composer, which reports them with its usual messages (and counts nodes itself)."""
    parser = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader
    count = depth = 0
    try:
        for event in yaml.parse(text, Loader=parser):
            if isinstance(event, yaml.NodeEvent):
                count += 1
                if count > MAX_NODES:
                    raise _too_many_nodes(event.start_mark)
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    raise _too_deep(event.start_mark)
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except LimitError:
        raise
    except yaml.YAMLError as exc:
        if "nesting depth" in str(getattr(exc, "problem", "")):  # libyaml stops at 1,000 levels, scanning ahead
            raise _too_deep(getattr(exc, "problem_mark", None)) from None
        return


class _CountingLoader(yaml.SafeLoader):
    """SafeLoader's composer with a bound on the number of nodes it builds (memory stays bounded
    whatever the quick scan above missed)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._nodes = self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._nodes += 1
        if self._nodes > MAX_NODES:
            raise _too_many_nodes(self.peek_event().start_mark)
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH + 1:  # scalars sit one level below their collection
                raise _too_deep(self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


_SAFE_COLLECTIONS = {"tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"}


def _error(message: str, node: yaml.Node) -> yaml.constructor.ConstructorError:
    return yaml.constructor.ConstructorError(None, None, message, node.start_mark)


class _Builder:
    """Turns a composed node tree into plain data, counting values and recording key lines."""

    def __init__(self, lines: Dict[PathKey, int]) -> None:
        self.lines = lines
        self.count = 0
        # One loader constructs every scalar with SafeLoader's rules (ints, floats, bools, nulls,
        # strings, and the harmless timestamps/binary the codec then rejects by type).
        self.loader = yaml.SafeLoader("")

    def convert(self, node: yaml.Node, path: PathKey, ancestors: Set[int]) -> Any:
        self.count += 1
        if self.count > MAX_VALUES:
            raise LimitError(None, None, f"the file expands to more than {MAX_VALUES:,} values (aliases '*name' "
                             "repeating large parts?); a project file needs far fewer, write the values out",
                             node.start_mark)
        self.lines[path] = node.start_mark.line + 1
        if not isinstance(node, yaml.ScalarNode) and node.tag not in _SAFE_COLLECTIONS:
            raise _error(f"tag {node.tag!r} is not allowed in a project file", node)
        if isinstance(node, yaml.ScalarNode):
            return self.scalar(node)
        if id(node) in ancestors:
            raise _error("an alias refers to a mapping or list that contains it (a cycle)", node)
        inner = ancestors | {id(node)}
        if isinstance(node, yaml.MappingNode):
            result: Dict[Any, Any] = {}
            first_line: Dict[Any, int] = {}
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    raise _error("mapping keys must be plain scalars", key_node)
                if key_node.tag == "tag:yaml.org,2002:merge":
                    raise _error("merge keys ('<<') are not supported in a project file; write the keys out",
                                 key_node)
                key = self.scalar(key_node)
                try:
                    hash(key)
                except TypeError:
                    raise _error("mapping keys must be plain scalars", key_node) from None
                if key in first_line:
                    raise _error(f"duplicate key '{key}' (first given on line {first_line[key]}); keep one of "
                                 "them", key_node)
                first_line[key] = key_node.start_mark.line + 1
                child = path + (key,)
                result[key] = self.convert(value_node, child, inner)
                self.lines[child] = key_node.start_mark.line + 1
            return result
        return [self.convert(item, path + (i,), inner) for i, item in enumerate(node.value)]

    def scalar(self, node: yaml.ScalarNode) -> Any:
        """Construct one scalar with SafeLoader's rules (the node cache is dropped each time).

        Text that looks like a value PyYAML cannot build (a 30 February, an integer of thousands of
        digits, ``!!float abc``, ``!!timestamp "x"``) is refused with its line, whatever PyYAML's
        constructor raised for it (ValueError, KeyError, or an AttributeError from inside PyYAML).
        """
        try:
            return self.loader.construct_object(node)
        except yaml.YAMLError:
            raise
        except Exception as exc:  # any tag whose constructor fails ('!!timestamp "x"': AttributeError inside PyYAML)
            shown = node.value if len(node.value) <= 40 else node.value[:37] + "..."
            tag = node.tag.rsplit(":", 1)[-1]
            kind = {"int": "an integer", "float": "a number", "timestamp": "a date", "bool": "true/false"}.get(
                tag, f"a {tag}")
            if isinstance(exc, KeyError):
                reason = "not a word YAML reads as true or false"
            elif isinstance(exc, (ValueError, ArithmeticError)):
                reason = str(exc).split(";")[0] or type(exc).__name__
            else:  # PyYAML's own failure (an AttributeError on a text no date pattern matches): not the user's words
                reason = f"not in the form a {tag} is written in"
            raise ValueProblem(None, None, f"'{shown}' is written as {kind} but is not a valid one ({reason})",
                               node.start_mark) from None
        finally:
            self.loader.constructed_objects.clear()
