"""A run's title and note (``note.json``): the user's words about a run, written only by the GUI.

The engine never reads or writes this file, so renaming or annotating a run never touches a file the
launcher or the workers own (``nnconsole.engine.rundir.protocol``). A damaged or foreign file reads as
no note; the text is bounded so a hostile file cannot make the history slow.
"""
from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass

from nnconsole.engine.atomic import atomic_write
from nnconsole.engine.rundir.protocol import NOTE_FILE, STATUS_FILE
from nnconsole.engine.rundir import safe_json

MAX_TITLE = 200  # characters kept of a title
MAX_NOTE = 20_000  # characters kept of a note
MAX_BYTES = 1 << 20  # a larger note.json is not read


@dataclass
class RunNote:
    """A run's title (shown in the history instead of its folder name) and free text."""

    title: str = ""
    note: str = ""

    def label(self, run_dir: str) -> str:
        """The title, else the run directory's name."""
        return self.title or os.path.basename(os.path.normpath(run_dir))


def read_note(run_dir: str) -> RunNote:
    """The run's note; an empty one when there is none or it cannot be read."""
    try:  # non-blocking, regular files only: a FIFO or a device planted as note.json must not hang the GUI
        fd = os.open(os.path.join(run_dir, NOTE_FILE), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return RunNote()
            data = safe_json.loads(fh.read(MAX_BYTES + 1)[:MAX_BYTES])
    except (OSError, ValueError):
        return RunNote()
    if not isinstance(data, dict):
        return RunNote()
    title, note = data.get("title"), data.get("note")
    return RunNote(title=" ".join(title.split())[:MAX_TITLE] if isinstance(title, str) else "",
                   note=note[:MAX_NOTE] if isinstance(note, str) else "")


def write_note(run_dir: str, title: str, note: str) -> RunNote:
    """Save the run's title (one line) and note atomically; an empty pair removes the file."""
    kept = RunNote(" ".join(title.split())[:MAX_TITLE], note.strip()[:MAX_NOTE])
    path = os.path.join(run_dir, NOTE_FILE)
    if not os.path.isfile(os.path.join(run_dir, STATUS_FILE)):
        raise FileNotFoundError(f"{run_dir}: not a run directory (no status.json)")
    if not kept.title and not kept.note:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        return kept
    payload = json.dumps({"title": kept.title, "note": kept.note}, ensure_ascii=False, indent=1) + "\n"
    atomic_write(path, payload.encode("utf-8"))
    return kept
