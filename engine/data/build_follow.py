"""Following another process's dataset cache build (issue 31): a host's other ranks train while it builds.

The process that holds the CSV's build lock builds the entry in the background while its first epoch trains
(``build_overlap``). Before its decode starts it announces the build in the build folder (``building.json``: the
key, the decode order's digest and the meta's index part; each image variable's decode order is beside it in
``cache.order_file``); the index arrays are already written there. A process waiting for the lock (``cache_build._wait``)
then opens that folder instead of waiting for the whole entry: it memory-maps the index and the pixel arrays
being written (``FollowedState``), and a batch's gather waits, asleep between polls, only until the builder's
progress record (``cache_partial``) lists the chunks holding its files.

Nothing a follower has mapped is ever truncated: a build that takes over a folder unlinks what it rewrites (new
inodes), the decode writes into the pixel files' inodes with ``pwrite``, and the folder is renamed into place
whole (a mapping of a renamed file stays valid). A poll notices a pixel file replaced (a build started over)
and maps the new one. The build's end is seen when the lock is free: the entry in place (complete: the same
inodes, or the entry's own arrays when it was built elsewhere), a failure record naming the build folder (every
follower raises the builder's located error), or neither (stopped, or the builder died: a batch decodes the
files it still needs itself, the pixels the build would write).
"""
from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import stat
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from nnconsole.engine.atomic import atomic_write
from nnconsole.engine.data import cache
from nnconsole.engine.data.build_overlap import BuildState
from nnconsole.engine.data.cache_partial import read_progress
from nnconsole.engine.data.csv_reader import DatasetError
from nnconsole.engine.data.regular_file import open_regular

MARKER_FILE = "building.json"
FAILED_SUFFIX = ".failed"
POLL_S = 0.1  # a waiting follower's sleep between two looks at the builder's progress
MAX_MARKER_BYTES = 16 << 20
FAILURE_KEEP_S = 600.0  # a failure record older than this is removed by the next build of the entry
_REWRITTEN = re.compile(r"^([xrnosla]\d+\.npy|building\.json)$")  # the index's arrays, the marker


def _unlink(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def clear_for_rebuild(partial: Path) -> None:
    """Before a build writes into ``partial`` (new, or taken over from an interrupted build): withdraw an old
    announcement and unlink the files the build rewrites, so a follower's mappings of them keep their bytes."""
    for name in os.listdir(partial):
        if _REWRITTEN.match(name):
            _unlink(partial / name)


def announce(partial: Path, key: str, order: str, chunk: int, size: int, index_meta: Mapping[str, Any]) -> None:
    """Tell waiting processes the build in ``partial`` may be followed (its index, pixel and decode order files,
    ``cache.order_file``, exist)."""
    marker = {"key": key, "order": order, "chunk": chunk, "size": size, "index": dict(index_meta)}
    atomic_write(str(partial / MARKER_FILE), json.dumps(marker).encode())


def withdraw(partial: Path) -> None:
    """Remove the announcement (the entry is about to be put in place: it is opened as an entry from then on)."""
    _unlink(partial / MARKER_FILE)


def read_marker(partial: Path, key: str) -> Optional[Dict[str, Any]]:
    """The announcement in ``partial`` when it is this user's, for ``key``, and well formed; else None."""
    try:
        with open_regular(partial / MARKER_FILE, follow_links=False) as fh:
            if os.fstat(fh.fileno()).st_uid != os.geteuid():
                return None
            raw = fh.read(MAX_MARKER_BYTES + 1)
        marker = json.loads(raw.decode("utf-8")) if len(raw) <= MAX_MARKER_BYTES else None
    except (OSError, ValueError):
        return None
    if not isinstance(marker, dict) or marker.get("key") != key or not isinstance(marker.get("index"), dict) \
            or not isinstance(marker.get("chunk"), int) or marker["chunk"] < 1 \
            or not isinstance(marker.get("size"), int) or not isinstance(marker.get("order"), str):
        return None
    return marker


def _failure_path(partial: Path) -> Path:
    return partial.parent / (partial.name + FAILED_SUFFIX)


def record_failure(partial: Path, error: BaseException) -> None:
    """Beside the build folder ``partial`` (about to be removed): the error that ended its build, which every
    process following it raises."""
    record = {"message": str(error), "dataset": isinstance(error, DatasetError),
              "path": getattr(error, "path", None), "line": getattr(error, "line", None),
              "variable": getattr(error, "variable", None)}
    try:
        atomic_write(str(_failure_path(partial)), json.dumps(record).encode())
    except OSError:
        pass  # followers then decode the files themselves and meet the same error


def read_failure(partial: Path) -> Optional[BaseException]:
    """The error recorded for the build in ``partial`` (this user's record), or None."""
    try:
        with open_regular(_failure_path(partial), follow_links=False) as fh:
            if os.fstat(fh.fileno()).st_uid != os.geteuid():
                return None
            record = json.loads(fh.read(1 << 20).decode("utf-8"))
        message = str(record["message"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if record.get("dataset"):
        line = record.get("line")
        return DatasetError(message, record.get("path"), line if isinstance(line, int) else None,
                            record.get("variable"))
    return OSError(errno.EIO, message)


def clear_failures(folder: Path, name: str) -> None:
    """Remove this user's failure records of entry ``name`` that no follower can still be reading."""
    now = time.time()
    for path in folder.glob(f".{name}.*{cache.PARTIAL_SUFFIX}{FAILED_SUFFIX}"):
        try:
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and now - st.st_mtime > FAILURE_KEEP_S:
                os.unlink(path)
        except OSError:
            continue


def lock_held(lock: Path) -> bool:
    """Whether some process (this one included, through another open) holds the build lock ``lock``; tested by
    taking it without waiting and giving it back at once."""
    try:
        fd = os.open(lock, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def map_stable(path: Path) -> Tuple[np.ndarray, Tuple[int, int]]:
    """``path`` memory-mapped read-only, and the (device, inode) of the file mapped."""
    for _ in range(5):
        before = os.stat(path)
        array = np.load(path, mmap_mode="r")
        after = os.stat(path)
        if (before.st_dev, before.st_ino) == (after.st_dev, after.st_ino):
            return array, (after.st_dev, after.st_ino)
    raise OSError(errno.EAGAIN, "the file kept being replaced", str(path))


def _inode(path: Path) -> Optional[Tuple[int, int]]:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


class FollowedState(BuildState):
    """``BuildState`` of another process's build, read from its build folder: ``missing`` polls (asleep
    POLL_S between looks) until the chunks it needs are listed done, or the build has ended.

    ``images`` (set by the caller) are the ``BuildingImages`` over the pixel files; a poll points them at new
    arrays when a file was replaced."""

    def __init__(self, partial: Path, entry: Path, lock: Path, marker: Mapping[str, Any],
                 orders: Sequence[np.ndarray], files: Sequence[str], mapped: Sequence[Tuple[int, int]]) -> None:
        super().__init__(orders, int(marker["chunk"]))
        self.partial, self.entry, self.lock = partial, entry, lock
        self.key, self.order, self.chunk = str(marker["key"]), str(marker["order"]), int(marker["chunk"])
        self.files, self.mapped = list(files), list(mapped)
        self.images: List[Any] = []
        self._first = np.cumsum([0] + [len(d) for d in self.done])  # a chunk's id in the builder's progress
        self._poll_lock = threading.Lock()
        self._progress_seen: Optional[Tuple[int, int, int]] = None
        self._last_poll = 0.0

    def poll(self, force: bool = False) -> None:
        """Take in what the builder has written since the last look (at most every POLL_S unless ``force``)."""
        with self._poll_lock:
            now = time.monotonic()
            if self.ended or (not force and now - self._last_poll < POLL_S):
                return
            self._last_poll = now
            held = lock_held(self.lock)  # first: what is read after it is at least as new as the build's end
            self._read_progress()
            if not held:
                self._ended()

    def _read_progress(self) -> None:
        try:
            st = os.stat(self.partial / cache.PROGRESS_FILE)
        except OSError:
            return
        seen = (st.st_ino, st.st_mtime_ns, st.st_size)
        if seen != self._progress_seen:
            self._progress_seen = seen
            progress = read_progress(self.partial)
            if progress.get("key") == self.key and progress.get("chunk") == self.chunk \
                    and progress.get("order", "files") == self.order:
                ids = np.asarray([i for i in progress.get("done", []) if 0 <= i < self._first[-1]], dtype=np.int64)
                jobs = np.searchsorted(self._first, ids, side="right") - 1
                for j in range(len(self.done)):
                    self.done[j][ids[jobs == j] - self._first[j]] = True
        for j, file in enumerate(self.files):  # a build that started over wrote new files: follow those
            now = _inode(self.partial / file)
            if now is not None and now != self.mapped[j]:
                self._remap(j, self.partial / file)
                self._progress_seen = None

    def _remap(self, job: int, path: Path) -> None:
        try:
            array, self.mapped[job] = map_stable(path)
        except (OSError, ValueError):
            return
        self.done[job][:] = False
        if job < len(self.images):
            self.images[job].array = array

    def _ended(self) -> None:
        """The lock is free: the build ended. Complete, failed, or stopped (or its process died)."""
        if all(_inode(self.entry / file) == self.mapped[j] for j, file in enumerate(self.files)):
            for done in self.done:
                done[:] = True  # the files we read are the entry's
        else:
            failure = read_failure(self.partial)
            if failure is not None:
                self.error = failure
            elif os.path.lexists(self.entry):  # put in place from another build folder than the one followed
                try:
                    _, arrays = cache.open_entry(self.entry, self.key)
                    for j, file in enumerate(self.files):
                        self.images[j].array = arrays[file]
                        self.done[j][:] = True
                except (OSError, ValueError):
                    self.stopped = True
            else:
                self.stopped = True  # what it did not write is decoded by the batches that need it
        self.ended = True

    def missing(self, job: int, files: np.ndarray, waited: Any = None) -> np.ndarray:
        chunks = np.unique(self.chunk_of[job][files])
        self.poll()  # rate-limited: a failure is raised at the next gather, as the builder's own process does
        while True:
            if self.error is not None:
                raise self.error
            ready = self.done[job][chunks].all()
            if ready or self.ended:
                break
            time.sleep(POLL_S)
            self.poll(force=True)
        if ready:
            return files[:0]
        return np.unique(files[~self.done[job][self.chunk_of[job][files]]])

    def wait_end(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        self.poll(force=True)
        while not self.ended and time.monotonic() < deadline:
            time.sleep(POLL_S)
            self.poll(force=True)
        return self.ended
