"""Host-memory float32 views of nnabla arrays: the trainer's per-iteration feeds and reads without ``.d``."""
from __future__ import annotations

from typing import Any, Dict

import numpy as np
import ctypes


class HostArrays:
    """float32 numpy views of nnabla arrays in host memory, for the per-iteration feeds and reads.

    ``view(var)`` is what ``var.d`` does underneath (``NdArray.data_ptr`` on the CPU context: the
    float32 host array, synced from the device when needed) minus about 12 us of Python per call,
    a quarter of the cost (bench/engine_overhead.py). A view is valid until nnabla next runs.
    """

    def __init__(self) -> None:
        from nnabla_ext.cpu import context  # deferred: nnabla stays out of the launcher

        self.ctx = context()
        self._types: Dict[int, Any] = {}

    def view(self, var: Any) -> np.ndarray:
        n = int(var.size)
        kind = self._types.get(n)
        if kind is None:
            kind = self._types[n] = ctypes.c_float * n
        address = var.data.data_ptr(np.float32, self.ctx)
        return np.frombuffer(kind.from_address(address), dtype=np.float32).reshape(var.shape)
