"""Images decoded when a batch is gathered (issue 31), for a dataset whose decoded images would pass the cache's
disk budget (``datasets.cache_budget``): an ImageNet-sized JPEG set trains without a 193 GB uint8 copy.

A batch's distinct files are decoded by a pool of threads (the decoders release the GIL), so a batch of 256
decodes on every core; the trainer's prefetch thread gathers the next batches while the current one trains, so
decoding overlaps training. Pixels are exactly what the cache would hold (the same ``decode_images``).
"""
from __future__ import annotations

import concurrent.futures
import os
from typing import Callable, List, Sequence, Tuple

import numpy as np

from nnconsole.engine.data.csv_reader import DatasetError
from nnconsole.engine.data.decode import ImageLayout, decode_images

# (distinct file index, "decode" or "size", reason) -> the located error naming the CSV line of that file
ErrorFn = Callable[[int, str, str], DatasetError]
MAX_THREADS = 16


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
        self._pool = None

    def __len__(self) -> int:
        return self.shape[0]

    def _decode(self, files: np.ndarray, out: np.ndarray) -> None:
        failure = decode_images([self.paths[int(i)] for i in files], self.layout, out)
        if failure is not None:
            position, kind, reason = failure
            raise self.error(int(files[position]), kind, reason)

    def take(self, files: np.ndarray) -> np.ndarray:
        """The uint8 samples of the distinct files ``files`` (repeats decoded once), in that order."""
        files = np.asarray(files, dtype=np.int64)
        unique, inverse = np.unique(files, return_inverse=True)
        out = np.empty((len(unique),) + self.shape[1:], dtype=np.uint8)
        parts: List[np.ndarray] = [p for p in np.array_split(np.arange(len(unique)), self._threads) if len(p)]
        if len(parts) <= 1:
            self._decode(unique, out)
        else:
            if self._pool is None:
                self._pool = concurrent.futures.ThreadPoolExecutor(self._threads, thread_name_prefix="decode")
            futures = [self._pool.submit(self._decode, unique[p], out[p[0]:p[-1] + 1]) for p in parts]
            for future in futures:
                future.result()  # raises the first bad file's located error
        return out[inverse]
