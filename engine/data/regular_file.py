"""Opening a file that must be a regular file: a FIFO, device, socket or folder planted where a data file is
expected is refused at once with a clear reason, never read (a FIFO would block the reader forever).

The check is made on the open descriptor (``fstat``), not on the path before opening, so nothing can be
swapped in between; the open itself does not block (``O_NONBLOCK``, which has no effect on regular files).
"""
from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO, Optional, Union

PathLike = Union[str, "os.PathLike[str]"]

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


class NotRegularFileError(OSError):
    """The path names something other than a regular file; ``str()`` says what it is."""


def kind_of(mode: int) -> str:
    """'a folder', 'a FIFO (named pipe)', ... for a non-regular file's ``st_mode``."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def open_regular(path: PathLike, follow_links: bool = True) -> BinaryIO:
    """``path`` opened for binary reading; NotRegularFileError when it is not a regular file, OSError as
    ``open`` raises it otherwise. ``follow_links=False`` refuses a symbolic link as the last component."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_links:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(os.fspath(path), flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_links:
            raise NotRegularFileError(errno.ELOOP, "a symbolic link, which is not followed here",
                                      os.fspath(path)) from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFileError(errno.EINVAL, f"{kind_of(mode)}, not a regular file", os.fspath(path))
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: PathLike, limit: Optional[int] = None, follow_links: bool = True) -> bytes:
    """The bytes of the regular file ``path`` (at most ``limit`` + 1, so a caller can tell it is too long)."""
    with open_regular(path, follow_links) as fh:
        return fh.read() if limit is None else fh.read(limit + 1)
