"""All-reduce of float32 gradients sent as float16: half the bytes on the wire (``multi_gpu.allreduce_precision``).

MPI has no float16 sum, so the messages travel as 16-bit words and a user-defined, commutative MPI
operation adds them as float16 (numpy adds two halves in float32 and rounds once). float16 holds
values up to 65504 and loses everything below 2**-24, so each bucket is scaled before the cast, as loss
scaling does for half-precision training, but with a scale known to be safe instead of one found by
overflowing (``engine/train/loss_scaling.py``): one small MAX all-reduce gives every rank the largest
``|gradient|`` of each bucket over all ranks, and the bucket is multiplied by the power of two that brings
``ranks x that maximum`` just under 65504. The sum therefore cannot overflow, no update is ever skipped,
every rank uses the same scale, and scaling by a power of two is exact. A message holding inf or NaN on any
rank (or only zeros) is reduced in float32 instead, so the trainer's own checks see it as before.
"""
from __future__ import annotations

import math
from typing import Any, List, Sequence

import numpy as np

FLOAT16_MAX = 65504.0
MAX_SCALE_EXPONENT = 100  # a bucket of tiny gradients: scaled up at most 2**100 (float32 holds it)
_OPS: dict = {}


def _float16_sum(incoming: Any, inout: Any, datatype: Any) -> None:
    """MPI reduction: ``inout += incoming`` on buffers of float16 values sent as 16-bit words."""
    a = np.frombuffer(incoming, dtype=np.float16)
    b = np.frombuffer(inout, dtype=np.float16)
    np.add(b, a, out=b)


def float16_sum_op(mpi: Any) -> Any:
    """The MPI operation (created once per process)."""
    if "sum" not in _OPS:
        _OPS["sum"] = mpi.Op.Create(_float16_sum, commute=True)
    return _OPS["sum"]


def safe_scale(global_max: float, ranks: int) -> float:
    """The power of two that keeps ``ranks x global_max x scale`` at most 65504 (the float16 sum's bound)."""
    if not (global_max > 0 and math.isfinite(global_max)):
        return 0.0  # nothing to scale (zeros) or not finite: reduced in float32
    exponent = math.floor(math.log2(FLOAT16_MAX / (ranks * global_max)))
    return 2.0 ** min(exponent, MAX_SCALE_EXPONENT)


class HalfPrecisionReducer:
    """Reduces the float32 message views of a communicator's buckets through float16 messages."""

    def __init__(self, mpi_comm: Any, mpi: Any) -> None:
        self.mpi, self._MPI = mpi_comm, mpi
        self.size = mpi_comm.Get_size()
        self._op = float16_sum_op(mpi)
        self._halves: List[np.ndarray] = []  # one float16 buffer per message, reused
        self.float32_fallbacks = 0  # messages sent in float32 (inf/NaN or all zero), over the run

    def _buffers(self, views: Sequence[np.ndarray]) -> List[np.ndarray]:
        if [h.size for h in self._halves] != [v.size for v in views]:
            self._halves = [np.empty(v.size, dtype=np.float16) for v in views]
        return self._halves

    def reduce(self, views: Sequence[np.ndarray], average: bool) -> None:
        """Replace every float32 view by its sum (``average``: mean) over ranks, sent as float16."""
        MPI = self._MPI
        maxima = np.array([np.max(np.abs(v)) if v.size else 0.0 for v in views], dtype=np.float32)
        maxima[~np.isfinite(maxima)] = np.inf  # MAX may drop a NaN (comparisons with it are false); never an inf
        self.mpi.Allreduce(MPI.IN_PLACE, maxima, op=MPI.MAX)
        after = 1.0 / self.size if average else 1.0
        for view, half, top in zip(views, self._buffers(views), maxima):
            scale = safe_scale(float(top), self.size)
            if scale == 0.0:
                self.float32_fallbacks += 1
                self.mpi.Allreduce(MPI.IN_PLACE, view, op=MPI.SUM)
                if average:
                    view *= np.float32(after)
                continue
            np.multiply(view, np.float32(scale), out=view)
            half[...] = view
            self.mpi.Allreduce(MPI.IN_PLACE, [half.view(np.uint16), MPI.UINT16_T], op=self._op)
            view[...] = half  # back to float32 first: the unscale factor may be far below float16's range
            view *= np.float32(after / scale)
