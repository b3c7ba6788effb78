"""Writing a file through a library call atomically: temp file beside it, fsync, rename.

``engine.project.io.atomic_write`` covers bytes we hold; this covers files that nnabla writes
itself (parameters, .nnp), so a crash or a full disk never leaves a half-written model behind.
"""
from __future__ import annotations

import os
from typing import Callable


def write_via(path: str, writer: Callable[[str], object]) -> str:
    """Call ``writer(tmp)`` on a temp path with the same extension, fsync it, rename it to ``path``.

    On any failure the temp file is removed and the previous ``path`` (if any) is left intact.
    """
    folder = os.path.dirname(os.path.abspath(path))
    stem, ext = os.path.splitext(os.path.basename(path))
    tmp = os.path.join(folder, f".{stem}.{os.getpid()}.tmp{ext}")
    try:
        writer(tmp)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path
