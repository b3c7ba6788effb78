"""The one way nnconsole parses JSON another process or a person may have written: nesting bounded first.

A run directory's files (``metrics.jsonl``, ``note.json``, ``status.json``, ``plan.json``, the events file,
the ranks' error records, an evaluation's metrics) are nnconsole's own, but anyone who can write there can
put a line of 100,000 ``[``: Python's parser then raises RecursionError, which is not a ValueError, so every
reader's "skip a torn line" promise broke into a traceback (issue 25 item 16). ``loads`` counts the nesting
before parsing (cheaply: only when the text holds more brackets than the bound can be deep) and refuses a
deeper document as a ``JsonDepthError``, a ValueError that every reader already handles as damaged text.
nnconsole never writes more than a few levels, so ``MAX_JSON_DEPTH`` leaves a wide margin.
"""
from __future__ import annotations

import json
import re
from typing import Any, Union

MAX_JSON_DEPTH = 64  # nnconsole's records nest 3 or 4 levels deep
_STRING = {bytes: re.compile(rb'"(?:[^"\\]|\\.)*"', re.S), str: re.compile(r'"(?:[^"\\]|\\.)*"', re.S)}
_BRACKETS = {bytes: re.compile(rb"[\[\]{}]"), str: re.compile(r"[\[\]{}]")}
_OPENERS = {bytes: (b"[", b"{"), str: ("[", "{")}


class JsonDepthError(ValueError):
    """JSON nested deeper than MAX_JSON_DEPTH: not a file nnconsole wrote (read as damaged)."""


def nesting_depth(text: Union[str, bytes]) -> int:
    """How deeply the lists and objects of a JSON text nest (brackets inside strings do not count)."""
    kind = bytes if isinstance(text, (bytes, bytearray)) else str
    opening = _OPENERS[kind]
    deepest = depth = 0
    for bracket in _BRACKETS[kind].findall(_STRING[kind].sub(b"" if kind is bytes else "", text)):
        if bracket in opening:
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def loads(text: Union[str, bytes], max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` for text nnconsole did not necessarily write: ValueError (JsonDepthError) for nesting deeper
    than ``max_depth``, ValueError for anything else the parser refuses; never RecursionError."""
    opening = _OPENERS[bytes if isinstance(text, (bytes, bytearray)) else str]
    if text.count(opening[0]) + text.count(opening[1]) > max_depth:  # only then can it be too deep: count
        depth = nesting_depth(text)
        if depth > max_depth:
            raise JsonDepthError(f"JSON nested {depth} levels deep, more than the {max_depth} nnconsole ever writes")
    try:
        return json.loads(text)
    except RecursionError:  # belt and braces: a depth the count above missed
        raise JsonDepthError(f"JSON nested more deeply than Python can parse (over {max_depth} levels)") from None
