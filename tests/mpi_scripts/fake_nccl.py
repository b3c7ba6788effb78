"""A recording stand-in for nnabla-ext-cuda's NCCL communicator (nnabla's API shape), for CPU tests.

nnabla's real ``MultiProcessDataParallelCommunicator`` needs a GPU. This fake keeps the parts of its
behaviour that the engine's GPU path depends on, and records every call:

- ``all_reduce`` and ``bcast`` do the real collective through mpi4py on the arrays' host copies.
- ``all_reduce_callback`` applies nnabla-ext-cuda 1.39's buffer arithmetic (``AllReduceCallback``
  splits a 40 MiB pool into ``40 MiB / sizeof(float) / pack_size`` buffers and pops one: 0 buffers
  is a pop on an empty queue, a crash on a GPU; here a RuntimeError). It returns a fresh empty
  callback list (the only object ``Variable.backward`` accepts besides nnabla's C++ callback) and
  queues the reduction, which runs when the engine synchronises the device: on a GPU that is when
  NCCL's work is known to be complete. A queued reduction that was never synchronised when the next
  callback is made is recorded as ``unsynchronised`` (the engine must not leave NCCL work behind).
- ``synchronize`` sleeps ``delay`` seconds per queued reduction: the communication time that the
  overlap with backward did not hide, as the engine would see it on a GPU.
"""
from __future__ import annotations

import time
from typing import Any, Dict, List

import numpy as np
from mpi4py import MPI

NNABLA_CUDA_PACK_POOL_BYTES = 40 << 20  # nnabla-ext-cuda 1.39 AllReduceCallback's device pool
FLOAT_BYTES = 4

RECORD: Dict[str, Any] = {"callbacks": [], "all_reduce": 0, "bcast": 0, "synchronize": 0, "unsynchronised": 0}
DELAY = [0.0]
_PENDING: List[tuple] = []
_RETURNED: List[list] = []  # every callback object handed out, kept alive so identities stay distinct


def _reduce(arrays: List[Any], division: bool) -> None:
    world = MPI.COMM_WORLD
    for array in arrays:
        host = np.ascontiguousarray(array.data, dtype=np.float32)
        out = np.empty_like(host)
        world.Allreduce(host, out, op=MPI.SUM)
        array.data = out / world.Get_size() if division else out


def synchronize() -> None:
    """The engine's device synchronisation: finish (and pay for) the queued callback reductions."""
    RECORD["synchronize"] += 1
    while _PENDING:
        arrays, division = _PENDING.pop(0)
        time.sleep(DELAY[0])
        _reduce(arrays, division)


class RecordingNccl:
    """nnabla.communicators.MultiProcessDataParallelCommunicator's shape, on CPU, recording calls."""

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx
        world = MPI.COMM_WORLD
        self.rank, self.size = world.Get_rank(), world.Get_size()
        self.local_rank = world.Split_type(MPI.COMM_TYPE_SHARED, key=self.rank).Get_rank()

    def add_context_and_parameters(self, ctx_and_params: Any) -> None:
        RECORD["parameters"] = len(ctx_and_params[1])

    def init(self) -> None:
        return None

    def bcast(self, data: List[Any], src: int = 0, inplace: bool = False, group: str = "world") -> None:
        RECORD["bcast"] += 1
        for array in data:
            array.data = MPI.COMM_WORLD.bcast(np.array(array.data, copy=True), root=src)

    def all_reduce(self, data: List[Any], division: bool = False, inplace: bool = False,
                   group: str = "world") -> None:
        RECORD["all_reduce"] += 1
        time.sleep(DELAY[0])
        _reduce(list(data), division)

    def all_reduce_callback(self, data: List[Any], pack_size: int, division: bool = False,
                            group: str = "world", scale_grad: float = 1, keep_dtype: bool = False) -> list:
        buffers = NNABLA_CUDA_PACK_POOL_BYTES // FLOAT_BYTES // int(pack_size)
        if buffers < 1:
            raise RuntimeError(f"all_reduce_callback(pack_size={pack_size}): nnabla-ext-cuda would split its "
                               f"40 MiB pool into {buffers} buffers and pop an empty queue (a crash on a GPU)")
        if _PENDING:
            RECORD["unsynchronised"] += 1
        callback: list = []
        _RETURNED.append(callback)
        RECORD["callbacks"].append({"pack_size": int(pack_size), "division": bool(division),
                                    "arrays": len(data), "object": len(_RETURNED) - 1,
                                    "distinct": all(callback is not other for other in _RETURNED[:-1])})
        _PENDING.append((list(data), division))
        return callback
