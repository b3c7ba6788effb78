"""Communicators: how workers agree on parameters and average gradients.

- ``SingleComm``: one process, nothing to exchange.
- ``MpiCpuComm``: mpi4py all-reduce over fused contiguous buckets (nnabla has no CPU communicator).
- ``NcclGpuComm``: nnabla-ext-cuda's NCCL data-parallel communicator, with backward overlap.

Rank, size and local rank always come from the MPI communicator (never from launcher variables),
so mpiexec, srun and a hostfile behave alike.
"""
from __future__ import annotations

import ctypes
import os
import time
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

DEFAULT_BUCKET_MB = 4.0
# Gradients at least this large skip the bucket copy and are reduced where nnabla keeps them.
DIRECT_MIN_BYTES = 256 * 1024


def speed_up_nnabla_accessors() -> None:
    """Make ``Variable.d`` / ``.g`` about 30 us cheaper per access (2-3x on small arrays).

    nnabla 1.39's Cython accessors import ``nnabla_ext.cpu`` on every call, trying the implicit relative
    name ``nnabla.nnabla_ext`` first; that module never exists, and a failed import searches the package
    folder each time. Recording the miss in ``sys.modules`` makes the relative attempt fail at once and
    the absolute import finds the loaded module. The worker loop and the all-reduce read and write
    gradients and inputs through these accessors every iteration (bench/engine_overhead.py).
    """
    import sys

    sys.modules.setdefault("nnabla.nnabla_ext", None)


class CommError(RuntimeError):
    """A communicator that cannot be created; the message says why (never fall back silently)."""


class SingleComm:
    """The communicator of a single-process run."""

    name = "single"
    rank = 0
    size = 1
    local_rank = 0
    # True where the trainer may scale gradients by 1/size in backward and ask all_reduce_gradients
    # for a plain sum (average=False) instead of the mean.
    sums_prescaled_gradients = False

    def __init__(self) -> None:
        self.allreduce_seconds = 0.0

    def broadcast_parameters(self, params: Dict[str, Any]) -> None:
        return None

    def all_reduce_gradients(self, params: Sequence[Any], average: bool = True) -> None:
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
    """CPU data parallelism through mpi4py: gradients summed or averaged across ranks.

    Every MPI message is at most ``bucket_mb``. Gradients of ``direct_min_bytes`` or more are
    all-reduced in place, in nnabla's own memory (no copy), in chunks of that size; smaller ones are
    packed into fused contiguous buckets, so a network of many small tensors costs a few MPI calls.
    Chunking matters: Open MPI reduced 100 MB as one message 3-4x slower than as 4 MB pieces.
    Gradient memory is reached through ``NdArray.data_ptr`` (a few us) rather than ``Variable.g`` (a
    numpy view, 5x dearer) and copied with ``memmove``. Blocking ``Allreduce``: Open MPI's non-blocking
    collectives only progress inside MPI calls, so on one thread they overlapped nothing and ran 2-3x
    slower on shared memory. Figures and the bucket-size sweep: bench/allreduce.py.
    """

    name = "mpi-cpu"
    # The trainer may scale the loss gradient by 1/N in backward and ask for a plain sum, which
    # saves the separate averaging pass over every gradient (exact when N is a power of two).
    sums_prescaled_gradients = True

    def __init__(self, mpi_comm: Any, bucket_mb: float = DEFAULT_BUCKET_MB,
                 direct_min_bytes: int = DIRECT_MIN_BYTES) -> None:
        super().__init__(mpi_comm)
        from nnabla_ext.cpu import context

        speed_up_nnabla_accessors()
        self._ctx = context()
        self._memory = getattr(self._MPI, "buffer", None) or self._MPI.memory  # mpi4py 4 / 3
        self.bucket_bytes = max(1, int((bucket_mb or DEFAULT_BUCKET_MB) * 1024 * 1024))
        self.direct_min_bytes = int(direct_min_bytes)
        self._layout: Optional[List[List[tuple]]] = None  # buckets of (param, offset, size)
        self._buffers: List[Optional[np.ndarray]] = []  # None: a single gradient reduced in place
        self._planned_for: Optional[List[int]] = None

    def _plan_buckets(self, params: Sequence[Any]) -> None:
        """Messages of at most ``bucket_mb``: small gradients packed together, large ones cut in chunks."""
        limit = max(1, self.bucket_bytes // 4)
        direct_min = max(1, min(self.direct_min_bytes // 4, limit))
        buckets: List[List[tuple]] = []
        direct: List[bool] = []
        packing: Optional[List[tuple]] = None
        used = 0
        for p in params:
            n = int(np.prod(p.shape)) if p.shape else 1
            if n >= direct_min:  # (param, first element, count) chunks reduced in place
                for first in range(0, n, limit):
                    buckets.append([(p, first, min(limit, n - first))])
                    direct.append(True)
                continue
            if packing is None or used + n > limit:
                packing = []
                buckets.append(packing)
                direct.append(False)
                used = 0
            packing.append((p, used, n))  # (param, offset in the bucket, count)
            used += n
        self._layout = buckets
        self._buffers = [None if d else np.empty(sum(n for _, _, n in b), dtype=np.float32)
                         for b, d in zip(buckets, direct)]
        self._planned_for = [id(p) for p in params]

    def broadcast_parameters(self, params: Dict[str, Any]) -> None:
        """Make every rank start from rank 0's parameters."""
        for name in sorted(params):
            var = params[name]
            data = np.ascontiguousarray(var.d, dtype=np.float32)
            self.mpi.Bcast(data, root=0)
            var.d = data

    def all_reduce_gradients(self, params: Sequence[Any], average: bool = True) -> None:
        """Replace every gradient by its mean over ranks (``average=False``: its sum)."""
        start = time.perf_counter()
        planned = self._planned_for
        if planned is None or len(planned) != len(params) or any(id(p) != q for p, q in zip(params, planned)):
            self._plan_buckets(params)
        MPI, memory, ctx, f32 = self._MPI, self._memory, self._ctx, np.float32
        scale = f32(1.0 / self.size)
        last, address = None, 0
        for bucket, buf in zip(self._layout, self._buffers):
            # data_ptr(float32, CPU context) is what Variable.g does underneath: the float32 CPU array,
            # created (zero-filled) if the gradient was only zeroed. Valid until nnabla runs again.
            if buf is None:  # a chunk of one large gradient: reduced in nnabla's memory, in place
                p, first, n = bucket[0]
                if p is not last:
                    last, address = p, p.grad.data_ptr(f32, ctx)
                mem = memory.fromaddress(address + 4 * first, 4 * n)
                self.mpi.Allreduce(MPI.IN_PLACE, [mem, MPI.FLOAT], op=MPI.SUM)
                if average:
                    view = np.frombuffer(mem, dtype=f32)
                    view *= scale
                continue
            base = buf.ctypes.data
            pointers = [p.grad.data_ptr(f32, ctx) for p, _, _ in bucket]
            for ptr, (_, off, n) in zip(pointers, bucket):
                ctypes.memmove(base + 4 * off, ptr, 4 * n)
            self.mpi.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
            if average:
                buf *= scale
            for ptr, (_, off, n) in zip(pointers, bucket):
                ctypes.memmove(ptr, base + 4 * off, 4 * n)
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

    def all_reduce_gradients(self, params: Sequence[Any], average: bool = True) -> None:
        start = time.perf_counter()
        self.nccl.all_reduce([p.grad for p in params], division=average, inplace=False)
        self.allreduce_seconds += time.perf_counter() - start


def mpi_world() -> Optional[Any]:
    """COMM_WORLD when this process was started by an MPI launcher with more than one rank."""
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise CommError(f"mpi4py is not importable ({exc}); reinstall nnconsole into its venv") from None
    world = MPI.COMM_WORLD
    return world if world.Get_size() > 1 else None


# Variables that MPI launchers (Open MPI/PRRTE, PMIx, MPICH/Hydra, Intel MPI, MVAPICH, Slurm) put into
# every rank's environment.
MPI_LAUNCHER_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS",
                          "MV2_COMM_WORLD_SIZE", "SLURM_PROCID")


def launched_by_mpi(environ: Optional[Dict[str, str]] = None) -> bool:
    """True when an MPI launcher may have started this process (one of its variables is set).

    Only used to skip initialising MPI in a plain single-process run: Open MPI's singleton start-up
    costs about a second (bench/startup.py). Rank and size still come from MPI itself.
    """
    env = os.environ if environ is None else environ
    return any(env.get(name) for name in MPI_LAUNCHER_VARIABLES)


def create_communicator(backend: str, ctx: Any = None, params: Optional[Dict[str, Any]] = None,
                        bucket_mb: float = 0.0, require_mpi: bool = False) -> SingleComm:
    """The communicator for this process, chosen at run time from the device backend.

    A single-worker run started without any MPI launcher does not initialise MPI at all.
    """
    if not require_mpi and not launched_by_mpi():
        return SingleComm()
    world = mpi_world()
    if world is None:
        if require_mpi:
            raise CommError("this worker was asked to train with several processes but MPI reports a single "
                            "process: mpiexec and mpi4py belong to different MPI installations")
        return SingleComm()
    if backend == "cuda":
        return NcclGpuComm(world, ctx, params or {})
    return MpiCpuComm(world, bucket_mb or DEFAULT_BUCKET_MB)
