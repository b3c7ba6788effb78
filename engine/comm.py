"""Communicators: how workers agree on parameters and average gradients.

- ``SingleComm``: one process, nothing to exchange.
- ``MpiCpuComm``: mpi4py all-reduce over fused contiguous buckets (nnabla has no CPU communicator).
- ``NcclGpuComm``: nnabla-ext-cuda's NCCL data-parallel communicator, with backward overlap.

Rank, size and local rank always come from the MPI communicator (never from launcher variables),
so mpiexec, srun and a hostfile behave alike.
"""
from __future__ import annotations

import time
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

DEFAULT_BUCKET_MB = 4.0


class CommError(RuntimeError):
    """A communicator that cannot be created; the message says why (never fall back silently)."""


class SingleComm:
    """The communicator of a single-process run."""

    name = "single"
    rank = 0
    size = 1
    local_rank = 0

    def __init__(self) -> None:
        self.allreduce_seconds = 0.0

    def broadcast_parameters(self, params: Dict[str, Any]) -> None:
        return None

    def all_reduce_gradients(self, params: Sequence[Any]) -> None:
        return None

    def backward_callback(self, params: Sequence[Any]) -> Optional[Any]:
        return None

    def sum(self, values: Sequence[float]) -> np.ndarray:
        return np.asarray(values, dtype=np.float64)

    def max(self, values: Sequence[float]) -> np.ndarray:
        return np.asarray(values, dtype=np.float64)

    def any(self, flag: bool) -> bool:
        return bool(flag)

    def barrier(self) -> None:
        return None

    def abort(self, code: int = 1) -> None:
        raise SystemExit(code)


class _MpiBase(SingleComm):
    """Shared mpi4py parts: small reductions for metrics, stop flags, barrier, abort."""

    def __init__(self, mpi_comm: Any) -> None:
        super().__init__()
        from mpi4py import MPI

        self._MPI = MPI
        self.mpi = mpi_comm
        self.rank = mpi_comm.Get_rank()
        self.size = mpi_comm.Get_size()
        node = mpi_comm.Split_type(MPI.COMM_TYPE_SHARED, key=self.rank)
        self.local_rank = node.Get_rank()
        self.local_size = node.Get_size()
        node.Free()

    def sum(self, values: Sequence[float]) -> np.ndarray:
        send = np.asarray(values, dtype=np.float64)
        out = np.empty_like(send)
        self.mpi.Allreduce(send, out, op=self._MPI.SUM)
        return out

    def max(self, values: Sequence[float]) -> np.ndarray:
        send = np.asarray(values, dtype=np.float64)
        out = np.empty_like(send)
        self.mpi.Allreduce(send, out, op=self._MPI.MAX)
        return out

    def any(self, flag: bool) -> bool:
        return bool(self.mpi.allreduce(1 if flag else 0, op=self._MPI.MAX))

    def barrier(self) -> None:
        self.mpi.Barrier()

    def abort(self, code: int = 1) -> None:
        self.mpi.Abort(code)


class MpiCpuComm(_MpiBase):
    """CPU data parallelism through mpi4py: gradients packed into fused buckets, all-reduced (mean).

    Packing into a few large contiguous buffers replaces one MPI call per parameter; buckets are
    reduced with non-blocking calls so packing bucket k+1 overlaps the reduction of bucket k.
    """

    name = "mpi-cpu"

    def __init__(self, mpi_comm: Any, bucket_mb: float = DEFAULT_BUCKET_MB) -> None:
        super().__init__(mpi_comm)
        self.bucket_bytes = max(1, int((bucket_mb or DEFAULT_BUCKET_MB) * 1024 * 1024))
        self._layout: Optional[List[List[tuple]]] = None
        self._buffers: List[np.ndarray] = []

    def _plan_buckets(self, params: Sequence[Any]) -> None:
        limit = max(1, self.bucket_bytes // 4)
        buckets: List[List[tuple]] = [[]]
        used = 0
        for p in params:
            n = int(np.prod(p.shape)) if p.shape else 1
            if used and used + n > limit:
                buckets.append([])
                used = 0
            buckets[-1].append((p, used, n))
            used += n
        self._layout = buckets
        self._buffers = [np.empty(sum(n for _, _, n in b), dtype=np.float32) for b in buckets]

    def broadcast_parameters(self, params: Dict[str, Any]) -> None:
        """Make every rank start from rank 0's parameters."""
        for name in sorted(params):
            var = params[name]
            data = np.ascontiguousarray(var.d, dtype=np.float32)
            self.mpi.Bcast(data, root=0)
            var.d = data

    def all_reduce_gradients(self, params: Sequence[Any]) -> None:
        start = time.perf_counter()
        if self._layout is None or sum(len(b) for b in self._layout) != len(params):
            self._plan_buckets(params)
        requests = []
        for bucket, buf in zip(self._layout, self._buffers):
            for p, off, n in bucket:
                buf[off:off + n] = p.g.reshape(-1)
            requests.append(self.mpi.Iallreduce(self._MPI.IN_PLACE, buf, op=self._MPI.SUM))
        scale = np.float32(1.0 / self.size)
        for req, bucket, buf in zip(requests, self._layout, self._buffers):
            req.Wait()
            buf *= scale
            for p, off, n in bucket:
                p.g = buf[off:off + n].reshape(p.shape)
        self.allreduce_seconds += time.perf_counter() - start


class NcclGpuComm(_MpiBase):
    """GPU data parallelism with nnabla-ext-cuda's NCCL communicator (gradients averaged)."""

    name = "nccl-gpu"

    def __init__(self, mpi_comm: Any, ctx: Any, params: Dict[str, Any], pack_mb: float = 64.0) -> None:
        super().__init__(mpi_comm)
        from engine.device import nccl_library

        try:
            import nnabla.communicators as C
            comm = C.MultiProcessDataParallelCommunicator(ctx)
            comm.add_context_and_parameters((ctx, params))
            comm.init()
        except Exception as exc:
            lib = nccl_library()
            hint = ("libnccl.so.2 was not found: pip install nvidia-nccl-cu12 (the 'cuda' extra) or add NCCL "
                    "to LD_LIBRARY_PATH" if not lib else f"libnccl found at {lib}; check that nnabla-ext-cuda "
                    "was built against Open MPI (the venv's mpiexec) and run 'nnconsole doctor'")
            raise CommError(f"cannot create the NCCL communicator on rank {self.rank}: {exc}. {hint}") from None
        if comm.size != self.size:
            raise CommError(f"nnabla's communicator sees {comm.size} processes but MPI has {self.size}: "
                            "nnabla-ext-cuda is not using the same MPI as mpiexec")
        self.nccl = comm
        self.pack_size = int(pack_mb * 1024 * 1024 / 4)

    def broadcast_parameters(self, params: Dict[str, Any]) -> None:
        self.nccl.bcast([params[k].data for k in sorted(params)], src=0, inplace=True)

    def backward_callback(self, params: Sequence[Any]) -> Any:
        """Overlap all-reduce with backward (nnabla's all_reduce_callback)."""
        return self.nccl.all_reduce_callback([p.grad for p in params], self.pack_size, division=True)

    def all_reduce_gradients(self, params: Sequence[Any]) -> None:
        start = time.perf_counter()
        self.nccl.all_reduce([p.grad for p in params], division=True, inplace=False)
        self.allreduce_seconds += time.perf_counter() - start


def mpi_world() -> Optional[Any]:
    """COMM_WORLD when this process was started by an MPI launcher with more than one rank."""
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise CommError(f"mpi4py is not importable ({exc}); reinstall nnconsole into its venv") from None
    world = MPI.COMM_WORLD
    return world if world.Get_size() > 1 else None


def create_communicator(backend: str, ctx: Any = None, params: Optional[Dict[str, Any]] = None,
                        bucket_mb: float = 0.0, require_mpi: bool = False) -> SingleComm:
    """The communicator for this process, chosen at run time from the device backend."""
    world = mpi_world()
    if world is None:
        if require_mpi:
            raise CommError("this worker was asked to train with several processes but MPI reports a single "
                            "process: mpiexec and mpi4py belong to different MPI installations")
        return SingleComm()
    if backend == "cuda":
        return NcclGpuComm(world, ctx, params or {})
    return MpiCpuComm(world, bucket_mb or DEFAULT_BUCKET_MB)
