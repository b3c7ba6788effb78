"""The one atomic file writer of nnconsole: temp file beside the target, fsync, rename.

Every save goes through here: project files (GUI, CLI, autosave), run files (status, options,
plan, checkpoints, metrics rewrites) and the files nnabla writes itself (parameters, .nnp), so a
crash or a full disk never leaves a half-written file, and a save never changes who may read the
file: an existing file keeps its mode (and, where permitted, its owner and group); a new file gets
the mode the umask gives, as ``open()`` would.

Only a regular file is ever replaced. A device or a FIFO named as the target (``-o /dev/null``,
``-o /dev/stdout``, a named pipe) is written into, never removed (the finished temp file, made in the
system's temp folder, is streamed into it); a folder, a socket or anything else is refused with
``NotAFileError``. ``target_problem`` and ``folder_problem`` say the same in words before anything is
written, so a command can refuse a bad output path with its own message.
"""
from __future__ import annotations

import errno
import os
import secrets
import shutil
import stat
import tempfile
from typing import Callable, Optional, Tuple

BACKUP_SUFFIX = ".bak"


class NotAFileError(OSError):
    """The target exists but is neither a regular file nor something to write into (a folder, a socket)."""


def _kind(mode: int) -> str:
    """What a file of ``mode`` is, in words ("a folder", "a socket"...)."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISREG(mode):
        return "a file"
    return "not a regular file"


def _written_into(mode: int) -> bool:
    """A target that is written into in place, never replaced: a device or a FIFO."""
    return stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode)


def folder_problem(folder: str) -> Optional[str]:
    """Why files cannot be written into ``folder`` (made when missing), in words; None when they can.

    The folder, or the nearest part of its path that exists, must be a folder: "notes.txt is a file,
    not a folder" rather than the system's "File exists" when a part of the path is a file.
    """
    path = os.path.abspath(folder)
    while True:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            parent = os.path.dirname(path)
            if parent == path:
                return None
            path = parent
            continue
        except NotADirectoryError:  # a part further up is a file: name that one
            path = os.path.dirname(path)
            continue
        except OSError:
            return None  # unreadable: let the write itself say why
        if stat.S_ISDIR(st.st_mode):
            return None
        return f"{path} is {_kind(st.st_mode)}, not a folder"


def target_problem(path: str) -> Optional[str]:
    """Why ``path`` cannot be written as an output file, in words; None when it can.

    A regular file (replaced), a device or FIFO (written into) and a missing file whose folder can be
    made are fine; a folder, a socket, or a path through a file are not.
    """
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return folder_problem(os.path.dirname(os.path.abspath(path)))
    except OSError:
        return None
    if stat.S_ISREG(st.st_mode) or _written_into(st.st_mode):
        return None
    return f"{path} is {_kind(st.st_mode)}, not a file"


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


def _write_into(path: str, writer: Callable[[str], object]) -> str:
    """Write a device or FIFO ``path`` in place: ``writer`` fills a temp file in the system's temp folder
    (the target's own folder, /dev say, need not be writable), whose bytes are then streamed into ``path``."""
    private = tempfile.mkdtemp(prefix="nnconsole-")  # mode 0700: nobody else can place a file or link in it
    tmp = os.path.join(private, "output" + os.path.splitext(path)[1])
    try:
        writer(tmp)
        # No O_CREAT, no O_TRUNC: the device or FIFO is opened as it is, never made or replaced.
        with open(tmp, "rb") as src, open(os.open(path, os.O_WRONLY), "wb", closefd=True) as dst:
            shutil.copyfileobj(src, dst)
    finally:
        shutil.rmtree(private, ignore_errors=True)
    return path


def _replace(path: str, writer: Callable[[str], object], tmp: str, backup: bool) -> str:
    folder = os.path.dirname(os.path.abspath(path))
    try:
        mode = os.stat(path).st_mode
    except OSError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        if _written_into(mode):
            return _write_into(path, writer)
        raise NotAFileError(errno.EISDIR if stat.S_ISDIR(mode) else errno.EINVAL,
                            f"is {_kind(mode)}, not a file; give a file name to write", path)
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
