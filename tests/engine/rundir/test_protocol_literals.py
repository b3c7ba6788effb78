"""No run-status word outside the protocol: every ``"running"``, ``"finished"``, ``"stopped"`` or ``"failed"`` in
engine/ and console_app/ is ``RunStatus`` from ``nnconsole.engine.rundir.protocol`` (issue 24).

The scan reads string tokens (``tokenize``), so words inside longer strings, docstrings, comments and f-strings
are not flagged; a string that is exactly a status word is, unless ALLOWED names it with the reason it is not
a run status. ``"unknown"`` (RunStatus.UNKNOWN, never written) is left out: it is an everyday word in messages.
"""
from __future__ import annotations

import ast
import functools
import io
import os
import tokenize
from typing import List, Tuple

from nnconsole.engine.rundir.protocol import RunStatus

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SCANNED = ("engine", "console_app")
PROTOCOL = os.path.join("engine", "rundir", "protocol.py")
STATUS_WORDS = frozenset(m.value for m in RunStatus if m is not RunStatus.UNKNOWN)

# (file, word): why that string is not a run status. Each entry must still occur (checked below).
ALLOWED = {
    (os.path.join("engine", "errors.py"), "finished"): "EXIT_CODE_MEANINGS: the help text's meaning of exit code 0 "
    "(errors.py is the bottom of the engine and imports nothing of it)",
    (os.path.join("engine", "errors.py"), "failed"): "EXIT_CODE_MEANINGS: the help text's meaning of exit code 1",
    (os.path.join("console_app", "evaluation", "inference.py"), "stopped"): "inference_failed's message when the "
    "user stopped an inference (no run is involved)",
}


def status_literals(source: str) -> List[Tuple[int, str]]:
    """(line, word) of every string token of ``source`` that is exactly a run-status word."""
    found = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.STRING:
            continue
        try:
            value = ast.literal_eval(token.string)
        except (ValueError, SyntaxError):  # an f-string: its pieces are not a status word on their own
            continue
        if isinstance(value, str) and value in STATUS_WORDS:
            found.append((token.start[0], value))
    return found


@functools.lru_cache(maxsize=None)
def scan() -> List[Tuple[str, int, str]]:
    """(file relative to the repository, line, word) for every status literal in the scanned folders."""
    found = []
    for top in SCANNED:
        for folder, dirs, files in os.walk(os.path.join(ROOT, top)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if not name.endswith(".py"):
                    continue
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, ROOT)
                if rel == PROTOCOL:
                    continue
                with open(path, encoding="utf-8") as fh:
                    source = fh.read()
                if any(f"{q}{word}{q}" in source for word in STATUS_WORDS for q in "'\""):  # else no such token
                    found += [(rel, line, word) for line, word in status_literals(source)]
    return found


def test_no_run_status_literal_outside_the_protocol():
    stray = [f"{rel}:{line}: {word!r}" for rel, line, word in scan() if (rel, word) not in ALLOWED]
    assert not stray, ("run-status words written as strings; use nnconsole.engine.rundir.protocol.RunStatus "
                       "(or add the string to ALLOWED with the reason it is no run status):\n" + "\n".join(stray))


def test_every_allowed_literal_still_occurs():
    present = {(rel, word) for rel, _line, word in scan()}
    assert set(ALLOWED) <= present, f"stale ALLOWED entries: {sorted(set(ALLOWED) - present)}"


def test_the_scan_flags_status_strings_and_nothing_else():
    source = ('"""A run is "running" here."""\n'
              'if st.status == "running" or st.status in (\'stopped\', "failed"):  # "finished"\n'
              '    say(f"{name} finished", "finished run", "unknown", b"failed")\n'
              'x = "finished"\n')
    assert status_literals(source) == [(2, "running"), (2, "stopped"), (2, "failed"), (4, "finished")]
    assert STATUS_WORDS == {"running", "finished", "stopped", "failed"}
