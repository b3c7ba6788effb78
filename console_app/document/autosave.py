"""Autosave: a side copy of a modified project every N seconds, recovered after a crash.

The copy sits next to the project as ``.<file>.autosave`` (or in the app data folder for an
untitled project). It is deleted when the project is saved or closed normally, so a copy found
at the next open means nnconsole did not close normally, and recovery is offered (``ProjectFiles``).
"""
from __future__ import annotations

import os
from datetime import datetime
from typing import Any, Optional

from PySide6.QtCore import QObject, QStandardPaths, QTimer, Signal

from nnconsole.engine.project.io import atomic_write, dumps_project, loads_project
from nnconsole.engine.project.model import Project

SUFFIX = ".autosave"
UNTITLED_NAME = "untitled.project.yaml"


def untitled_folder() -> str:
    """Where untitled projects are autosaved (inside the app's data folder)."""
    base = QStandardPaths.writableLocation(QStandardPaths.AppDataLocation) or os.path.expanduser("~/.nnconsole")
    return os.path.join(base, "autosave")


def autosave_path(project_path: Optional[str]) -> str:
    """The side file for ``project_path`` (None: the untitled project's)."""
    if project_path:
        folder, name = os.path.split(os.path.abspath(project_path))
        return os.path.join(folder, f".{name}{SUFFIX}")
    return os.path.join(untitled_folder(), UNTITLED_NAME + SUFFIX)


def pending_autosave(project_path: Optional[str]) -> Optional[str]:
    """The side file a crash left for ``project_path``, or None.

    A copy holding exactly the project file's text has nothing to recover and is deleted. A copy
    older than the project file is still offered: the file may have been changed outside nnconsole
    after the crash, and both versions hold work (see ``older_than_project``).
    """
    side = autosave_path(project_path)
    if not os.path.isfile(side):
        return None
    if project_path and _same_bytes(side, project_path):
        remove_quietly(side)
        return None
    return side


def older_than_project(side: str, project_path: Optional[str]) -> bool:
    """Whether the project file was written after the side file (so each holds changes the other lacks)."""
    try:
        return bool(project_path) and os.stat(side).st_mtime_ns < os.stat(project_path).st_mtime_ns
    except OSError:
        return False


def _same_bytes(a: str, b: str) -> bool:
    try:
        if os.path.getsize(a) != os.path.getsize(b):
            return False
        with open(a, "rb") as fa, open(b, "rb") as fb:
            return fa.read() == fb.read()
    except OSError:
        return False


def saved_at(path: str) -> str:
    """The side file's modification time, as people read it."""
    return datetime.fromtimestamp(os.path.getmtime(path)).strftime("%Y-%m-%d %H:%M:%S")


def read_autosave(side: str, project_path: Optional[str]) -> Project:
    """The project stored in a side file, as if loaded from ``project_path`` (not validated:
    the copy may hold work in progress)."""
    with open(side, "r", encoding="utf-8") as fh:
        text = fh.read()
    project = loads_project(text, file=project_path or side)
    project.path = os.path.abspath(project_path) if project_path else None
    return project


def remove_quietly(path: Optional[str]) -> None:
    if path:
        try:
            os.remove(path)
        except OSError:
            pass


class Autosaver(QObject):
    """Writes the document's side file every ``interval_s`` seconds while it has unsaved changes."""

    saved = Signal(str)  # path of the side file written
    failed = Signal(str)  # why writing failed

    def __init__(self, document: Any, interval_s: int = 60, parent: Optional[QObject] = None) -> None:
        super().__init__(parent)
        self.document = document
        self._written: Optional[str] = None  # side file this session wrote (and may delete)
        self._last_text = ""
        self._timer = QTimer(self)
        self._timer.timeout.connect(self.save_if_needed)
        self.set_interval(interval_s)
        document.modified_changed.connect(self._modified_changed)
        document.path_changed.connect(self._path_changed)
        document.reloaded.connect(self._path_changed)  # a project opened from another file

    def set_interval(self, seconds: float) -> None:
        """Autosave every ``seconds`` (0 or less turns autosave off)."""
        self._timer.stop()
        if seconds > 0:
            self._timer.start(int(seconds * 1000))

    def stop(self) -> None:
        self._timer.stop()

    def save_if_needed(self) -> Optional[str]:
        """Write the side file when the document has changes not yet in it; return its path."""
        if not self.document.modified:
            return None
        return self.save_now()

    def save_now(self) -> Optional[str]:
        target = autosave_path(self.document.path)
        text = dumps_project(self.document.project)
        if text == self._last_text and self._written == target and os.path.isfile(target):
            return target
        try:
            atomic_write(target, text.encode("utf-8"))
        except OSError as exc:
            self.failed.emit(f"autosave to {target} failed: {exc.strerror or exc}")
            return None
        if self._written and self._written != target:
            remove_quietly(self._written)
        self._written, self._last_text = target, text
        self.saved.emit(target)
        return target

    def adopt(self, side: str) -> None:
        """Take over a recovered side file: it is rewritten by the next autosave and deleted on save."""
        self._written, self._last_text = side, ""

    def discard(self) -> None:
        """Delete the side file this session wrote (after a save or a deliberate discard)."""
        remove_quietly(self._written)
        self._written, self._last_text = None, ""

    def _modified_changed(self, modified: bool) -> None:
        if not modified:
            self.discard()

    def _path_changed(self, _path: str = "") -> None:
        # A different file now: the old side file is obsolete (Save As writes the project itself).
        if self._written and self._written != autosave_path(self.document.path):
            self.discard()
