"""Replacing an existing dataset folder in one step: the new one is built aside, then the two are swapped.

``dataset create --force`` onto an existing dataset used to move the new images into the folder one by
one: interrupted half-way, the folder held new images mixed with old ones under the old CSVs. Now the
new dataset is finished in a staging folder beside the old one, the user's other files in the old
folder are carried into it (hard links, so nothing is copied and the old folder stays whole), and the
two folders are swapped by one ``renameat2(RENAME_EXCHANGE)`` (two renames where the system has none).
Until the swap the old dataset is untouched; after it the new one is complete; only then is the old
folder removed. A process killed at any point leaves one whole dataset at the output path, plus at
most a marked staging folder that the next run removes.
"""
from __future__ import annotations

import ctypes
import errno
import os
import shutil
import stat
from typing import Callable, List, Set

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _renameat2():
    try:
        return getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    except OSError:
        return None


def exchange(a: str, b: str) -> bool:
    """Swap the folders ``a`` and ``b`` atomically; False where the system or file system cannot."""
    fn = _renameat2()
    if fn is None:
        return False
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), a, None, b)


def carry_over(old: str, new: str, skip: Callable[[str], bool]) -> List[str]:
    """Put into ``new`` every entry of ``old`` that ``new`` does not have (the new dataset's files win).

    Files become hard links (copies where links are refused), folders are made with the old one's mode,
    links and named pipes are made again. ``skip(relative path)`` leaves an entry out (staging folders).
    Returns what could not be carried (sockets, devices): the caller keeps the old folder then.
    """
    left: List[str] = []
    for folder, dirs, files in os.walk(old):
        rel = os.path.relpath(folder, old)
        keep_walking = []
        for name in sorted(dirs) + sorted(files):
            relative = os.path.normpath(os.path.join(rel, name))
            if skip(relative):
                continue
            src, dst = os.path.join(folder, name), os.path.join(new, relative)
            st = os.lstat(src)
            if stat.S_ISDIR(st.st_mode):
                if not os.path.lexists(dst):
                    os.mkdir(dst)
                    shutil.copystat(src, dst, follow_symlinks=False)
                if os.path.isdir(dst) and not os.path.islink(dst):
                    keep_walking.append(name)
                else:
                    left.append(relative)  # a new file where the user had a folder: that folder is kept
                continue
            if os.path.lexists(dst):
                continue  # the new dataset's file of that name replaces it
            if stat.S_ISLNK(st.st_mode):
                os.symlink(os.readlink(src), dst)
            elif stat.S_ISREG(st.st_mode):
                try:
                    os.link(src, dst, follow_symlinks=False)
                except OSError:
                    shutil.copy2(src, dst, follow_symlinks=False)
            elif stat.S_ISFIFO(st.st_mode):
                os.mkfifo(dst, stat.S_IMODE(st.st_mode))
            else:
                left.append(relative)
        dirs[:] = [d for d in dirs if d in keep_walking]
    return left


def keep_modes(old: str, new: str, names: Set[str]) -> None:
    """Files the new dataset writes over same-named ones keep the old file's mode (as the atomic writer does)."""
    for name in names:
        before, after = os.path.join(old, name), os.path.join(new, name)
        try:
            if stat.S_ISREG(os.lstat(before).st_mode) and os.path.isfile(after):
                shutil.copymode(before, after)
        except OSError:
            pass


def swap_in(staging: str, out: str, aside: str) -> str:
    """Make the finished ``staging`` folder the folder ``out``; returns where the old folder now is.

    With RENAME_EXCHANGE the old folder ends at ``staging``'s path; otherwise it is renamed to ``aside``
    first (and renamed back if the second rename fails), so ``out`` is missing only between two renames.
    """
    if exchange(staging, out):
        return staging
    os.rename(out, aside)
    try:
        os.rename(staging, out)
    except BaseException:
        os.rename(aside, out)
        raise
    return aside
