"""Training while the dataset cache is built (issue 31): the first epoch trains on chunks as they are finished.

A cold start used to decode every distinct image file before the first iteration. Now the build decodes the
files in the order the first epoch's batches first reference them (``first_use_order``: from the epoch's
sample order and the row-to-file index), on a thread of the process that holds the build lock, and a batch's
gather waits (asleep on a condition, woken by each finished chunk) only until the chunks holding its files are
written (``BuildingImages``). The pixels are those of the finished cache (the same decode into the same array),
so a cold run trains exactly as a warm one. A resumed run's build decodes from the epoch and position it resumes at
(``loading.first_needed_order``); a build folder started in another order keeps the chunks it has written and
decodes the rest in the new order (``keep_done_chunks``).

When the build stops (a stop request) its build folder stays resumable, and a batch that still needs a file
decodes it itself (``decode_images``, the same pixels) so training reaches the iteration where it stops; when the
build fails (a bad image), every later gather raises the build's error, which names the CSV line.
"""
from __future__ import annotations

import contextlib
import logging
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Type

import numpy as np

from nnconsole.engine.data.decode import ImageLayout, decode_images

log = logging.getLogger(__name__)

WAIT_S = 0.5  # the longest one sleep of a waiting gather (it is woken at once by a finished chunk)


def first_use_order(row_files: np.ndarray, order: np.ndarray, files: int) -> np.ndarray:
    """The distinct files (0..files-1) in the order rows ``order`` first reference them through ``row_files``;
    files no row references come last. uint32, a permutation of 0..files-1."""
    referenced = np.asarray(row_files)[np.asarray(order, dtype=np.int64)]
    seen, first = np.unique(referenced, return_index=True)
    used = referenced[np.sort(first)].astype(np.int64)
    if len(seen) < files:
        rest = np.setdiff1d(np.arange(files, dtype=np.int64), seen, assume_unique=True)
        used = np.concatenate([used, rest])
    return used.astype(np.uint32)


def keep_done_chunks(previous: np.ndarray, done: Sequence[int], wanted: np.ndarray, chunk: int) -> np.ndarray:
    """The decode order for resuming a build that decoded in the order ``previous`` and has written its chunks
    ``done`` (of ``chunk`` positions each), when the run now wants ``wanted`` (a resumed run needs its files in
    another order than the run that started the build): the written chunks keep their files, at their positions,
    and the other positions take the files not yet written in ``wanted``'s order. uint32, a permutation of
    ``previous``'s files, so nothing written is decoded again."""
    order = np.array(previous, dtype=np.uint32)
    kept = np.zeros(len(order), dtype=bool)
    for c in done:
        kept[int(c) * chunk:(int(c) + 1) * chunk] = True
    written = np.zeros(len(order), dtype=bool)
    written[order[kept]] = True
    wanted = np.asarray(wanted, dtype=np.int64)
    order[~kept] = wanted[~written[wanted]]
    return order


class BuildState:
    """What a running build has written, per job (image variable): which chunks are done, and how it ended.

    ``chunk_of[job][f]`` is the chunk that holds distinct file ``f``; ``finished(job, chunk)`` marks a chunk
    written (the build calls it, from its thread); ``end(error)`` records the end: None (complete), a
    DatasetBuildStopped (stopped, resumable) or the build's error (raised by every later wait)."""

    def __init__(self, orders: Sequence[np.ndarray], chunk: int) -> None:
        self._cond = threading.Condition()
        self.chunk_of = []
        self.done = []
        for order in orders:
            of = np.empty(len(order), dtype=np.int64)
            of[np.asarray(order, dtype=np.int64)] = np.arange(len(order)) // chunk
            self.chunk_of.append(of)
            self.done.append(np.zeros(-(-len(order) // chunk), dtype=bool))
        self.ended = False
        self.error: Optional[BaseException] = None
        self.stopped = False

    def finished(self, job: int, chunk: int) -> None:
        with self._cond:
            self.done[job][chunk] = True
            self._cond.notify_all()

    def end(self, error: Optional[BaseException] = None, stopped: bool = False) -> None:
        with self._cond:
            self.ended, self.stopped = True, stopped
            self.error = None if stopped else error  # stopped: the files it did not write are decoded by take
            self._cond.notify_all()

    def wait_end(self, timeout: float) -> bool:
        """Wait (asleep) up to ``timeout`` seconds for the build to end; whether it has."""
        with self._cond:
            return self._cond.wait_for(lambda: self.ended, timeout)

    def missing(self, job: int, files: np.ndarray, waited: Optional[Callable[[float], None]] = None) -> np.ndarray:
        """Wait until the chunks of ``files`` are written or the build has ended; returns the files still not
        written (none unless the build stopped). Raises the build's error when it failed."""
        chunks = np.unique(self.chunk_of[job][files])
        with self._cond:
            while True:
                if self.error is not None:
                    raise self.error
                ready = self.done[job][chunks]
                if ready.all() or self.ended:
                    break
                self._cond.wait(WAIT_S)
        if ready.all():
            return files[:0]
        return np.unique(files[~self.done[job][self.chunk_of[job][files]]])


class BuildingImages:
    """An image variable's samples (one per distinct file) in a cache entry still being built: ``take`` waits
    for the chunks it needs; ``shape`` and ``dtype`` as the finished array's."""

    def __init__(self, array: np.ndarray, state: BuildState, job: int, paths: Sequence[str], layout: ImageLayout,
                 error: Callable[[int, str, str], BaseException]) -> None:
        self.array, self.state, self.job = array, state, job
        self.paths, self.layout, self.error = paths, layout, error
        self.dtype = array.dtype
        self.shape: Tuple[int, ...] = tuple(array.shape)
        self.ndim = array.ndim

    def __len__(self) -> int:
        return self.shape[0]

    def take(self, files: np.ndarray) -> np.ndarray:
        """The uint8 samples of the distinct files ``files``, in that order, once they are written."""
        files = np.asarray(files, dtype=np.int64)
        missing = self.state.missing(self.job, files)
        pixels = np.take(self.array, files, axis=0)
        if len(missing):  # the build stopped: these are decoded here (the pixels the build would write)
            decoded = np.empty((len(missing),) + self.shape[1:], dtype=np.uint8)
            failure = decode_images([self.paths[int(f)] for f in missing], self.layout, decoded)
            if failure is not None:
                raise self.error(int(missing[failure[0]]), failure[1], failure[2])
            where: Dict[int, int] = {int(f): k for k, f in enumerate(missing)}
            for k, f in enumerate(files):
                if int(f) in where:
                    pixels[k] = decoded[where[int(f)]]
        return pixels


@dataclass
class PendingBuild:
    """A build that goes on after ``cache_build.cached_entry`` returns: ``view`` is what the caller trains on
    meanwhile; ``finish()`` decodes the rest and returns (meta, pixel files) for the entry, on the build thread,
    which holds the build lock until the entry is in place; ``end(error, stopped)`` is told how it ended."""

    view: Any
    finish: Callable[[], Tuple[Dict[str, Any], List[str]]]
    end: Callable[[Optional[BaseException], bool], None]


def finish_in_background(held: contextlib.ExitStack, pending: PendingBuild, stopped: Type[BaseException],
                         complete: Callable[[Dict[str, Any], List[str]], None],
                         discard: Callable[[BaseException], Any]) -> threading.Thread:
    """Run ``pending`` to its end on a thread: ``complete(meta, files)`` puts the entry in place; a ``stopped``
    exception (a stop request) leaves the build folder to be resumed; any other failure ``discard(error)``s it. The
    thread is not a daemon (the process waits for it; a stop request ends it within a second); the lock in
    ``held`` is released when it ends, before ``pending.end`` tells the waiting gathers."""

    def run() -> None:
        error: Optional[BaseException] = None
        was_stopped = False
        with held:
            try:
                complete(*pending.finish())
            except stopped as exc:
                log.info("%s; it resumes at the next load", exc)
                error, was_stopped = exc, True
            except BaseException as exc:  # noqa: BLE001 - handed to the gathers waiting for it
                log.warning("the dataset cache build failed: %s", exc)
                discard(exc)
                error = exc
        # told only once the lock is released: a load that follows the end (a resume, a rebuild) takes the lock
        # instead of finding it still held and following a build that has already ended
        pending.end(error, was_stopped)
    thread = threading.Thread(target=run, name="dataset-cache-build")
    thread.start()
    return thread
