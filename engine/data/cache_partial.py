"""The build folder of a dataset cache entry: created safely, resumed after an interruption, finished into place.

A build writes into ``.<entry name>.<random>.partial``, created with ``mkdir`` (which never follows or accepts
an existing link or folder) under a name nobody can predict, private (mode 0700) until it is renamed into
place. With the CSV's lock held, an interrupted build of this user (a real folder it owns, whose progress file
names the same key) is resumed instead; nothing else is reused. The arrays are created at their full size
with ``posix_fallocate``, so a full disk is reported when the build starts ("disk full", naming the folder)
instead of killing a decode process with SIGBUS halfway; the decode processes write with ``pwrite``, never
through a memory map.
"""
from __future__ import annotations

import errno
import json
import os
import secrets
import stat
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from nnconsole.engine.atomic import atomic_write
from nnconsole.engine.data import cache
from nnconsole.engine.data.regular_file import open_regular

MAX_PROGRESS_BYTES = 64 << 20


class CacheDiskFullError(OSError):
    """The cache folder's file system has no room for the entry; the message names the folder and the size."""


def _umask() -> int:
    """This process's umask, read without changing it where Linux says it (/proc), else by setting it back."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def new_partial(folder: Path, name: str) -> Path:
    """A new, empty, private build folder for the entry ``name`` in ``folder`` (never an existing path)."""
    while True:
        path = folder / f".{name}.{secrets.token_hex(8)}{cache.PARTIAL_SUFFIX}"
        try:
            os.mkdir(path, 0o700)
            return path
        except FileExistsError:  # astronomically unlikely: draw another name
            continue


def partials(folder: Path, name: str) -> List[Path]:
    """The build folders of the entry ``name`` in ``folder`` that are real folders (links are not), newest first."""
    found = []
    for path in folder.glob(f".{name}.*{cache.PARTIAL_SUFFIX}"):
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            found.append((st.st_mtime_ns, path))
    return [path for _, path in sorted(found, reverse=True)]


def read_progress(partial: Path) -> Dict:
    """The progress record of a build folder, or {} when there is none or it is not one (wrong JSON types
    included): a resumed build then starts over instead of failing."""
    try:
        with open_regular(partial / cache.PROGRESS_FILE, follow_links=False) as fh:
            raw = fh.read(MAX_PROGRESS_BYTES + 1)
        progress = json.loads(raw.decode("utf-8")) if len(raw) <= MAX_PROGRESS_BYTES else None
    except (OSError, ValueError):
        return {}
    if not isinstance(progress, dict):
        return {}
    done, digests = progress.get("done"), progress.get("digests")
    if not isinstance(done, list) or not all(isinstance(i, int) for i in done) or not isinstance(digests, dict) \
            or not all(isinstance(d, str) and len(d) == 64 for d in digests.values()):
        return {k: v for k, v in progress.items() if k in ("total", "count") and isinstance(v, int)}
    return progress


def write_progress(partial: Path, progress: Dict) -> None:
    atomic_write(str(partial / cache.PROGRESS_FILE), json.dumps(progress).encode())


def resumable_partial(folder: Path, name: str, key: str, chunk: int) -> Optional[Path]:
    """This user's interrupted build of ``name`` under ``key`` (chunks of ``chunk`` rows), the furthest along."""
    best: Tuple[int, Optional[Path]] = (-1, None)
    for path in partials(folder, name):
        if path.lstat().st_uid != os.geteuid():
            continue
        progress = read_progress(path)
        if progress.get("key") == key and progress.get("chunk") == chunk and "done" in progress:
            best = max(best, (len(progress["done"]), path), key=lambda pair: pair[0])
    return best[1]


def create_array(path: Path, shape: Tuple[int, ...]) -> None:
    """A new uint8 ``.npy`` file of ``shape`` at ``path``, its space reserved (zeros), or CacheDiskFullError."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
    try:
        with os.fdopen(os.dup(fd), "wb") as fh:
            np.lib.format.write_array_header_1_0(fh, {"descr": "|u1", "fortran_order": False, "shape": shape})
            fh.flush()
            offset = fh.tell()
        total = offset + int(np.prod(shape))
        try:
            os.posix_fallocate(fd, 0, total)
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise disk_full(path.parent.parent, total) from None
            if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                raise
            os.ftruncate(fd, total)  # no fallocate here (and no emulation): a sparse file, as before
    finally:
        os.close(fd)


def disk_full(folder: Path, needed: int) -> CacheDiskFullError:
    return CacheDiskFullError(errno.ENOSPC, f"disk full: the dataset cache in {folder} needs {needed / 1e6:,.1f} MB "
                              "more than its file system has free; free some space, or set 'datasets: cache: false'",
                              str(folder))


def array_ready(path: Path, shape: Tuple[int, ...]) -> bool:
    """Whether ``path`` is a whole uint8 ``.npy`` file of ``shape`` (a resumed build reuses it)."""
    try:
        offset, found, dtype = cache.npy_layout(path)
        return found == shape and dtype == np.uint8 and path.stat().st_size == offset + int(np.prod(shape))
    except (OSError, ValueError):
        return False


def finish_entry(partial: Path, entry: Path, key: str, meta: Mapping[str, object], files: Sequence[str]) -> None:
    """Fsync the pixel arrays ``files`` (the index's were synced when written), write the meta (each array's
    checksum in it) last and rename the build folder to ``entry`` (atomic), readable as the umask says. When
    another process put a finished entry there first, ours is discarded and theirs is used; a damaged one that
    cannot be replaced raises StuckEntryError."""
    for file in files:
        fd = os.open(partial / file, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    (partial / cache.PROGRESS_FILE).unlink(missing_ok=True)
    whole = {"version": cache.CACHE_VERSION, "key": key, **meta}
    atomic_write(str(partial / cache.META_FILE), json.dumps(whole, indent=1).encode())
    os.chmod(partial, 0o777 & ~_umask())
    try:
        os.rename(partial, entry)
    except OSError:
        try:
            cache.open_entry(entry, key)  # another process's finished entry: use theirs
        except (OSError, ValueError):
            try:
                cache.remove_build_folder(entry, must=True)  # StuckEntryError when it cannot be removed
            except cache.StuckEntryError:
                cache.remove_build_folder(partial)
                raise
            os.rename(partial, entry)
            return
        cache.remove_build_folder(partial)


def chunk_digests(progress: Dict, chunks: Sequence[Tuple[int, int, int]]) -> Dict[int, str]:
    """The chunk digests (hex) a progress record holds for the chunks it lists as done."""
    digests = progress.get("digests", {})
    return {int(i): digests[str(i)] for i in progress.get("done", []) if 0 <= int(i) < len(chunks)
            and str(i) in digests}
