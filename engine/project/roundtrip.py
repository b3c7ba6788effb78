"""Project YAML written as people write it, and saved into an existing file changing only what changed.

A project is one YAML file that people edit by hand and keep in git. Saving it must not rewrite it: the
template's header comment, the user's comments, the key order, block or flow style and the quoting of
the values nobody changed all stay as they were, and a default the file leaves out is not written.

``merged_text`` does that with ruamel.yaml's round-trip document (it keeps comments and styles on every
node): the original file is loaded twice, as a round-trip tree and as typed plain data (``old``, through
the same codec as the model), the model gives the new plain data (``new``), and only where ``old`` and
``new`` differ is the tree changed (a scalar replaced in place, a key or list item added or removed,
neighbours untouched). A key the file leaves out whose typed value did not change stays out, which is
how defaults stay unwritten. The diff walks plain dicts and lists, never named fields, so a field added
to the schema later is handled like every other.

``dumps_clean`` writes a new file in the templates' style: mappings in block style, lists of scalars and
small mappings of scalars below the top-level sections in flow style (``shape: [1, 28, 28]``,
``W: {type: Constant, value: 0.0}``).
"""
from __future__ import annotations

import io
import json
import re
from difflib import SequenceMatcher
from typing import Any, Dict, List, Optional, Tuple

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError as RuamelError
from ruamel.yaml.scalarstring import ScalarString

WIDTH = 100  # the width the project files have always been written at
KEEP_LINES = 1 << 16  # an existing file's long lines are never re-wrapped
_MISSING = object()


def _yaml(mapping: int = 2, sequence: int = 2, offset: int = 0, width: int = WIDTH) -> YAML:
    """A round-trip YAML reader/writer with the given indentation (the templates': 2, 2, 0)."""
    yaml = YAML(typ="rt", pure=True)
    yaml.width = width
    yaml.preserve_quotes = True
    yaml.allow_unicode = True
    yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
    yaml.representer.add_representer(float, _represent_float)
    return yaml


def _represent_float(representer: Any, value: float) -> Any:
    """A float as YAML 1.1 readers (PyYAML, nnabla's tools) read it back as a float: ``1.0e-08``, not
    ``1e-08`` (a string there), and ``.inf``/``.nan``."""
    if value != value:
        text = ".nan"
    elif value in (float("inf"), float("-inf")):
        text = ".inf" if value > 0 else "-.inf"
    else:
        text = repr(value).lower()
        if "." not in text and "e" in text:
            text = text.replace("e", ".0e", 1)
    return representer.represent_scalar("tag:yaml.org,2002:float", text)


def _is_scalar(value: Any) -> bool:
    return not isinstance(value, (dict, list, tuple))


def fresh_node(value: Any, depth: int = 0, like: Any = None) -> Any:
    """``value`` (plain data) as round-trip nodes in the templates' style; ``like`` is the node it replaces,
    whose string quoting style a new string keeps."""
    if isinstance(value, dict):
        node = CommentedMap((k, fresh_node(v, depth + 1)) for k, v in value.items())
        node.fa.set_flow_style() if depth >= 2 and value and all(map(_is_scalar, value.values())) \
            else node.fa.set_block_style()
        return node
    if isinstance(value, (list, tuple)):
        node = CommentedSeq(fresh_node(v, depth + 1) for v in value)
        node.fa.set_flow_style() if all(map(_is_scalar, value)) else node.fa.set_block_style()
        return node
    if isinstance(value, str) and isinstance(like, ScalarString) and like and "\n" not in value:
        return type(like)(value)  # a quoted value stays quoted the same way ('' is quoted only to be empty)
    return value


def _kind(value: Any) -> str:
    """bool, int and float compare equal in Python (True == 1 == 1.0); a change of kind is a change."""
    return "bool" if isinstance(value, bool) else "num" if isinstance(value, (int, float)) else type(value).__name__


def same(a: Any, b: Any) -> bool:
    """Plain data equal value for value and kind for kind (mapping order aside)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, (dict, list, tuple)) or isinstance(b, (dict, list, tuple)):
        return False
    return _kind(a) == _kind(b) and a == b


def _merge(node: Any, old: Any, new: Any, depth: int) -> Any:
    """The node for ``new``: ``node`` itself when nothing changed, ``node`` edited in place where it can be,
    a fresh node otherwise."""
    if old is not _MISSING and same(old, new):
        return node
    if isinstance(node, CommentedMap) and isinstance(old, dict) and isinstance(new, dict):
        _merge_map(node, old, new, depth)
        return node
    if isinstance(node, CommentedSeq) and isinstance(old, (list, tuple)) and isinstance(new, (list, tuple)) \
            and len(node) == len(old):
        _merge_seq(node, list(old), list(new), depth)
        return node
    return fresh_node(new, depth, like=node)


def _merge_map(node: CommentedMap, old: Dict[str, Any], new: Dict[str, Any], depth: int) -> None:
    for key in [k for k in node if k not in new]:
        del node[key]
    previous: Optional[Any] = None
    for key, value in new.items():
        if key in node:
            merged = _merge(node[key], old.get(key, _MISSING), value, depth + 1)
            if merged is not node[key]:
                _set(node, key, merged)
        elif key in old and same(old[key], value):
            continue  # a value the file leaves out (a default) and nobody changed stays out
        else:
            position = list(node).index(previous) + 1 if previous is not None else 0
            node.insert(position, key, fresh_node(value, depth + 1))
        previous = key


def _set(node: CommentedMap, key: Any, value: Any) -> None:
    """``node[key] = value``, except that ruamel would quote a plain string the way the value it replaces was
    quoted (``''`` made ``link: '100mbit,1ms'``): such a key is put back at its place with its comments."""
    if type(value) is str and isinstance(node[key], ScalarString):
        position = list(node).index(key)
        comment = node.ca.items.pop(key, None)
        del node[key]
        node.insert(position, key, value)
        if comment is not None:
            node.ca.items[key] = comment
        return
    node[key] = value


def _fingerprint(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


def _merge_seq(node: CommentedSeq, old: List[Any], new: List[Any], depth: int) -> None:
    """Edit the list in place with the fewest changes: kept items keep their nodes (and comments)."""
    opcodes = SequenceMatcher(None, [_fingerprint(v) for v in old], [_fingerprint(v) for v in new],
                              autojunk=False).get_opcodes()
    for tag, i1, i2, j1, j2 in reversed(opcodes):  # from the end, so earlier indexes stay valid
        if tag == "equal":
            continue
        paired = min(i2 - i1, j2 - j1)
        for k in range(i1 + paired, i2)[::-1]:
            del node[k]
        for k in range(j1 + paired, j2)[::-1]:
            node.insert(i1 + paired, fresh_node(new[k], depth + 1))
        for k in range(paired):
            merged = _merge(node[i1 + k], old[i1 + k], new[j1 + k], depth + 1)
            if merged is not node[i1 + k]:
                node[i1 + k] = merged


def dumps_clean(data: Dict[str, Any]) -> str:
    """The text of a new project file (no original to keep) in the templates' style."""
    out = io.StringIO()
    _yaml().dump(fresh_node(data), out)
    return out.getvalue()


_OPEN_KEY = re.compile(r"^( *)[^\s#-][^:]*:\s*(#.*)?$")  # a key whose value starts on the next line
_NESTED = re.compile(r"^( *)(- )?[^\s#]")


def _indents(text: str) -> Tuple[int, int]:
    """How the file indents a mapping under its key, and how far a list's dash is indented under its key
    (templates: 2 and 0, ``layers:`` then ``- name``; PyYAML-like files: 2 and 2)."""
    mapping: Optional[int] = None
    offset: Optional[int] = None
    lines = text.splitlines()
    for above, line in zip(lines, lines[1:]):
        key, below = _OPEN_KEY.match(above), _NESTED.match(line)
        if not key or not below:
            continue
        step = len(below.group(1)) - len(key.group(1))
        if below.group(2) and offset is None and step >= 0:
            offset = step
        elif not below.group(2) and mapping is None and step > 0:
            mapping = step
        if mapping is not None and offset is not None:
            break
    return mapping or 2, offset or 0


def merged_text(original: str, old: Dict[str, Any], new: Dict[str, Any]) -> Optional[str]:
    """``original`` (a project file's text, whose typed data is ``old``) changed to hold ``new`` with the
    fewest edits, keeping comments, order and styles; None when the text cannot be read round-trip (the
    caller then writes a clean file)."""
    try:
        mapping, offset = _indents(original)
        yaml = _yaml(mapping, mapping + offset if offset else mapping, offset, KEEP_LINES)
        tree = yaml.load(original)
    except (RuamelError, ValueError, TypeError):
        return None
    if not isinstance(tree, CommentedMap):
        return None
    if same(old, new):
        return original
    _merge_map(tree, old, new, 0)
    out = io.StringIO()
    yaml.dump(tree, out)
    return _original_line_breaks(original, out.getvalue())


def _original_line_breaks(original: str, merged: str) -> str:
    """``merged`` with each run of lines that differs from ``original`` only in where lines break and how
    much space there is (ruamel joins a flow mapping written over several lines) put back as it was."""
    before, after = original.splitlines(keepends=True), merged.splitlines(keepends=True)
    out: List[str] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if tag == "replace" and "".join(before[i1:i2]).split() == "".join(after[j1:j2]).split():
            out.extend(before[i1:i2])
        else:
            out.extend(after[j1:j2])
    return "".join(out)
