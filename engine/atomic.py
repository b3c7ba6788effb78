"""The one atomic file writer of nnconsole: temp file beside the target, fsync, rename.

Every save goes through here: project files (GUI, CLI, autosave), run files (status, options,
plan, checkpoints, metrics rewrites) and the files nnabla writes itself (parameters, .nnp), so a
crash or a full disk never leaves a half-written file, and a save never changes who may read the
file: an existing file keeps its mode (and, where permitted, its owner and group); a new file gets
the mode the umask gives, as ``open()`` would.
"""
from __future__ import annotations

import os
import secrets
import shutil
import stat
from typing import Callable, Optional, Tuple

BACKUP_SUFFIX = ".bak"


def _existing_owner_and_mode(path: str) -> Optional[Tuple[int, int, int]]:
    """(mode bits, uid, gid) of the file ``path`` names now, or None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid


def _keep_owner_and_mode(tmp: str, previous: Optional[Tuple[int, int, int]]) -> None:
    """Give the finished temp file the previous file's mode and owner (a new file keeps its umask mode)."""
    if previous is None:
        return
    mode, uid, gid = previous
    st = os.stat(tmp)
    if (st.st_uid, st.st_gid) != (uid, gid):
        try:  # root may give it back to its owner; anyone may keep a group they belong to
            os.chown(tmp, uid if st.st_uid != uid else -1, gid if st.st_gid != gid else -1)
        except OSError:
            pass
    if stat.S_IMODE(st.st_mode) != mode:
        os.chmod(tmp, mode)


def _temp_name(path: str, ext: str = "") -> str:
    folder = os.path.dirname(os.path.abspath(path))
    return os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.{secrets.token_hex(4)}.tmp{ext}")


def _fsync_folder(folder: str) -> None:
    """Make the rename itself durable (best effort: some file systems refuse fsync on folders)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        pass


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def write_via(path: str, writer: Callable[[str], object], backup: bool = False) -> str:
    """Call ``writer(tmp)`` on a temp path with the same extension, fsync it, rename it to ``path``.

    For writers that open the file themselves (nnabla's savers, which pick the format by the
    extension). With ``backup`` the previous file is kept as ``path + '.bak'``. On any failure the
    temp file is removed and the previous ``path`` (if any) is left intact. Returns ``path``.
    """
    return _replace(path, writer, _temp_name(path, os.path.splitext(path)[1]), backup)


def _replace(path: str, writer: Callable[[str], object], tmp: str, backup: bool) -> str:
    folder = os.path.dirname(os.path.abspath(path))
    previous = _existing_owner_and_mode(path)
    try:
        writer(tmp)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        _keep_owner_and_mode(tmp, previous)
        if backup and previous is not None:
            shutil.copy2(path, path + BACKUP_SUFFIX)
        os.replace(tmp, path)
    except BaseException:
        _unlink_quietly(tmp)
        raise
    _fsync_folder(folder)
    return path


def atomic_write(path: str, data: bytes, backup: bool = False) -> None:
    """Write ``data`` to ``path`` atomically (see ``write_via``); the folder is created when missing."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)

    def write_bytes(tmp: str) -> None:
        # O_EXCL: never write through a file or link someone placed at the temp name; mode 0666
        # before the umask, as open() gives a new file.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)

    _replace(path, write_bytes, _temp_name(path), backup)
