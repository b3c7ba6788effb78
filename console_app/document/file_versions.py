"""What the GUI knows of its project file on disk, and side copies that keep versions it would replace.

The GUI remembers the state of the file it read or wrote (``DiskState``); before writing over the
file it compares, so an edit made outside nnconsole (a text editor, git, another nnconsole) is
noticed and never silently lost: it is kept as ``<name>.outside-<time>.yaml`` beside the project,
where no later save (and no ``.bak``) replaces it. Nothing here imports Qt.
"""
from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from datetime import datetime
from typing import Optional

_CHUNK = 1 << 16


@dataclass(frozen=True)
class DiskState:
    """One version of a file: its size and modification time (cheap to compare) and content hash."""

    mtime_ns: int
    size: int
    digest: str


def disk_state(path: Optional[str]) -> Optional[DiskState]:
    """The state of the regular file at ``path``, or None when there is none (or it cannot be read)."""
    if not path:
        return None
    try:
        with open(path, "rb") as fh:
            info = os.fstat(fh.fileno())
            if not stat.S_ISREG(info.st_mode):
                return None
            digest = hashlib.sha256()
            for block in iter(lambda: fh.read(_CHUNK), b""):
                digest.update(block)
    except OSError:
        return None
    return DiskState(info.st_mtime_ns, info.st_size, digest.hexdigest())


def changed_on_disk(path: Optional[str], known: Optional[DiskState]) -> Optional[DiskState]:
    """The file's current state when its content is no longer ``known``; None when it is unchanged,
    gone (nothing there to lose) or ``known`` is None (the GUI never read it)."""
    if known is None or not path:
        return None
    try:
        info = os.stat(path)
    except OSError:
        return None
    if (info.st_mtime_ns, info.st_size) == (known.mtime_ns, known.size):
        return None
    current = disk_state(path)
    if current is None or current.digest == known.digest:  # touched, or rewritten with the same text
        return None
    return current


def copy_path(project_path: str, label: str, when: float) -> str:
    """``<folder>/<stem>.<label>-<YYYYmmdd-HHMMSS>.yaml`` for ``project_path`` (a .yaml name, so File >
    Open shows it); the first such name not taken (``-2``, ``-3``... appended)."""
    folder, name = os.path.split(os.path.abspath(project_path))
    stem, ext = os.path.splitext(name)
    if ext.lower() not in (".yaml", ".yml"):
        stem, ext = name, ".yaml"
    base = os.path.join(folder, f"{stem}.{label}-{datetime.fromtimestamp(when).strftime('%Y%m%d-%H%M%S')}")
    candidate, n = base + ext, 1
    while os.path.lexists(candidate):
        n += 1
        candidate = f"{base}-{n}{ext}"
    return candidate


def keep_copy(source: str, project_path: str, label: str) -> str:
    """Copy ``source`` beside ``project_path`` under a new name (see ``copy_path``, stamped with the
    source's modification time); never replaces a file. Keeps the source's mode and times; returns
    the copy's path. Raises OSError when the copy cannot be made (then nothing may be overwritten)."""
    with open(source, "rb") as fh:
        data = fh.read()
        info = os.fstat(fh.fileno())
    while True:
        target = copy_path(project_path, label, info.st_mtime)
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, stat.S_IMODE(info.st_mode))
        except FileExistsError:  # taken between the check and the open: pick the next name
            continue
        break
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(target, stat.S_IMODE(info.st_mode))  # the umask may have narrowed os.open's mode
        os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))
    except BaseException:
        try:
            os.unlink(target)
        except OSError:
            pass
        raise
    return target
