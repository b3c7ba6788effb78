"""Images decoded when a batch is gathered (issue 31), for a dataset whose decoded images would pass the cache's
disk budget (``datasets.cache_budget``): an ImageNet-sized JPEG set trains without a 193 GB uint8 copy.

A batch's distinct files are decoded by the decode worker processes (``decode_pool``: the cache build's
``decode_process``, one per core shared by the host's ranks) into shared memory, outside the training process's
GIL. Batches are decoded ahead: the trainer's prefetcher announces the next batches (``start``) while the
current one trains, and ``take`` then finds their pixels decoded. Pixels are exactly what the cache would hold
(the same ``decode_images``). ``DECODE_IN_PROCESSES`` False decodes with a pool of threads in this process
instead (before processes; bench/on_the_fly.py compares the two).
"""
from __future__ import annotations

import collections
import concurrent.futures
import os
import threading
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np

from nnconsole.engine.data.csv_reader import DatasetError
from nnconsole.engine.data.decode import ImageLayout, decode_images
from nnconsole.engine.data.decode_pool import DecodeJob, DecodePool, shared_pool

# (distinct file index, "decode" or "size", reason) -> the located error naming the CSV line of that file
ErrorFn = Callable[[int, str, str], DatasetError]
MAX_THREADS = 16
DECODE_IN_PROCESSES = True  # False: threads in this process (bench/on_the_fly.py measures both)
DECODE_AHEAD = 2  # batches the trainer announces beyond the one it gathers
MAX_STARTED = 2 * DECODE_AHEAD + 2  # batches started and not yet taken; past it the oldest is dropped


class OnDemandImages:
    """An image variable's samples, one per distinct file, decoded when taken; ``shape`` as the cache's array."""

    def __init__(self, paths: Sequence[str], layout: ImageLayout, error: ErrorFn) -> None:
        self.paths = paths
        self.layout = layout
        self.error = error
        self.dtype = np.dtype(np.uint8)
        self.shape: Tuple[int, ...] = (len(paths),) + tuple(layout.sample_shape)
        self.ndim = len(self.shape)
        self._threads = max(1, min(os.cpu_count() or 1, MAX_THREADS))
        self._thread_pool: Optional[concurrent.futures.ThreadPoolExecutor] = None
        self._lock = threading.Lock()
        # batch (its files' bytes) -> (distinct files, where each of the batch's files is among them, job)
        self._started: "collections.OrderedDict[bytes, Tuple[np.ndarray, np.ndarray, DecodeJob]]" = (
            collections.OrderedDict())

    def __len__(self) -> int:
        return self.shape[0]

    # ---- decode processes ---------------------------------------------------------------------
    def _processes(self) -> DecodePool:
        """The decode processes: this process's (``decode_pool.shared_pool``), started on first use."""
        return shared_pool()

    def _submit(self, files: np.ndarray) -> Tuple[np.ndarray, np.ndarray, DecodeJob]:
        unique, inverse = np.unique(files, return_inverse=True)
        return unique, inverse, self._processes().submit([self.paths[int(i)] for i in unique], self.layout)

    def start(self, files: np.ndarray) -> None:
        """Start decoding the distinct files ``files`` of a batch that ``take`` will be asked for soon."""
        if not DECODE_IN_PROCESSES:
            return
        files = np.asarray(files, dtype=np.int64)
        key = files.tobytes()
        with self._lock:
            if key in self._started:
                return
            if len(self._started) >= MAX_STARTED:  # announced and never taken (a stop): dropped
                dropped = self._started.popitem(last=False)[1][2]
                dropped.pool.release(dropped)
            self._started[key] = self._submit(files)

    def take(self, files: np.ndarray) -> np.ndarray:
        """The uint8 samples of the distinct files ``files`` (repeats decoded once), in that order."""
        files = np.asarray(files, dtype=np.int64)
        if not DECODE_IN_PROCESSES:
            return self._take_in_threads(files)
        with self._lock:
            started = self._started.pop(files.tobytes(), None)
            unique, inverse, job = started if started is not None else self._submit(files)
        pool = job.pool
        try:
            pixels, failure = pool.result(job)
            if failure is not None:
                position, kind, reason = failure
                raise self.error(int(unique[position]), kind, reason)
            return pixels[inverse]  # a copy: the shared region is reused once released
        finally:
            pool.release(job)

    # ---- threads (DECODE_IN_PROCESSES False) --------------------------------------------------
    def _decode(self, files: np.ndarray, out: np.ndarray) -> None:
        failure = decode_images([self.paths[int(i)] for i in files], self.layout, out)
        if failure is not None:
            position, kind, reason = failure
            raise self.error(int(files[position]), kind, reason)

    def _take_in_threads(self, files: np.ndarray) -> np.ndarray:
        unique, inverse = np.unique(files, return_inverse=True)
        out = np.empty((len(unique),) + self.shape[1:], dtype=np.uint8)
        parts: List[np.ndarray] = [p for p in np.array_split(np.arange(len(unique)), self._threads) if len(p)]
        if len(parts) <= 1:
            self._decode(unique, out)
        else:
            if self._thread_pool is None:
                self._thread_pool = concurrent.futures.ThreadPoolExecutor(self._threads,
                                                                          thread_name_prefix="decode")
            futures = [self._thread_pool.submit(self._decode, unique[p], out[p[0]:p[-1] + 1]) for p in parts]
            for future in futures:
                future.result()  # raises the first bad file's located error
        return out[inverse]
