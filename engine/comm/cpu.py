"""Communicators: how workers agree on parameters and average gradients.

- ``SingleComm``: one process, nothing to exchange.
- ``MpiCpuComm``: mpi4py all-reduce over fused contiguous buckets (nnabla has no CPU communicator).
- ``NcclGpuComm`` (:mod:`nnconsole.engine.comm.nccl`): nnabla-ext-cuda's NCCL data-parallel communicator,
  with backward overlap.

Rank, size and local rank always come from the MPI communicator (never from launcher variables),
so mpiexec, srun and a hostfile behave alike.
"""
from __future__ import annotations

import time
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

import sys
from nnconsole.engine.backend.mpi import CommError, host_count, launched_by_mpi, local_rank_of, mpi_world
from nnconsole.engine.test_seams import seam
from nnconsole.engine.comm.half import HalfPrecisionReducer
from nnconsole.engine.comm.overlap import OverlappedBackward

# From the bucket sweep of bench/allreduce.py (three runs, three gradient layouts): 2 MB was at or
# within noise of the fastest size everywhere and ahead of 4 MB in 8 of the 9 comparisons.
DEFAULT_BUCKET_MB = 2.0
# id(parameter Variable) -> the plan token of the MpiCpuComm whose bucket its gradient views. A second
# communicator that re-homes the same gradients invalidates the first one's plan instead of leaving
# it to reduce a stale bucket. _PLANS counts plans, so a communicator re-checks ownership only after
# another plan was made (one integer comparison per call otherwise).
_GRADIENT_OWNER: Dict[int, object] = {}
_PLANS = [0]
# Bucket plans a communicator keeps for other parameter lists (a GAN's generator and discriminator take
# turns every iteration): switching back re-uses the buckets instead of copying every gradient again.
MAX_KEPT_PLANS = 8


def speed_up_nnabla_accessors() -> None:
    """Make ``Variable.d`` / ``.g`` about 30 us cheaper per access (2-3x on small arrays).

    nnabla 1.39's Cython accessors import ``nnabla_ext.cpu`` on every call, trying the implicit relative
    name ``nnabla.nnabla_ext`` first; that module never exists, and a failed import searches the package
    folder each time. Recording the miss in ``sys.modules`` makes the relative attempt fail at once and
    the absolute import finds the loaded module. The worker loop and the all-reduce read and write
    gradients and inputs through these accessors every iteration (bench/engine_overhead.py).
    """

    sys.modules.setdefault("nnabla.nnabla_ext", None)


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

    # True where ``backward(reduce=True)`` all-reduces the gradients itself (overlapped with backward)
    overlaps_backward = False

    def backward(self, loss: Any, grad: float, params: Sequence[Any], reduce: bool = False,
                 average: bool = True) -> None:
        """Backward from ``loss``; the gradients are reduced later by ``all_reduce_gradients``."""
        loss.backward(grad, clear_buffer=True)

    def sum(self, values: Sequence[float]) -> np.ndarray:
        return np.asarray(values, dtype=np.float64)

    def max(self, values: Sequence[float]) -> np.ndarray:
        return np.asarray(values, dtype=np.float64)

    def any(self, flag: bool) -> bool:
        return bool(flag)

    def average_persistent(self, params: Sequence[Any]) -> None:
        """Replace non-learned state (BatchNormalization running mean/var) by its mean over ranks."""
        return None

    def sum_array(self, values: np.ndarray) -> np.ndarray:
        """The element-wise sum over ranks of a float32 array (synchronized BatchNormalization)."""
        return values

    def sum_counts(self, values: np.ndarray) -> np.ndarray:
        """The element-wise sum over ranks of an array of counts, as int32 (the epoch's sample coverage)."""
        return np.array(values, dtype=np.int32)

    def any_sleeping(self, flag: bool) -> bool:
        """``any`` for a rank that may wait long for the others (while its host's first rank builds the dataset
        cache): the same answer, waited for asleep."""
        return bool(flag)


class _MpiBase(SingleComm):
    """Shared mpi4py parts: rank and local rank, small reductions for metrics and stop flags."""

    def __init__(self, mpi_comm: Any) -> None:
        super().__init__()
        from mpi4py import MPI  # deferred: mpi4py stays out of the launcher

        self._MPI = MPI
        self.mpi = mpi_comm
        self.rank = mpi_comm.Get_rank()
        self.size = mpi_comm.Get_size()
        self.local_rank = local_rank_of(mpi_comm)

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

    def average_persistent(self, params: Sequence[Any]) -> None:
        """Mean over ranks of every array in ``params``, in one float64 message (ChainerMN's
        ``allreduce_persistent``). Every rank receives the same reduced bytes, so the state ends
        bit-identical on all ranks, and state that is already equal comes back unchanged (exact in float64).
        """
        if not params:
            return
        flat = np.concatenate([np.asarray(p.d, dtype=np.float64).ravel() for p in params])
        self.mpi.Allreduce(self._MPI.IN_PLACE, flat, op=self._MPI.SUM)
        flat /= self.size
        offset = 0
        for p in params:
            n = int(np.prod(p.shape))
            p.d = flat[offset:offset + n].reshape(p.shape).astype(np.float32)
            offset += n

    def sum_counts(self, values: np.ndarray) -> np.ndarray:
        out = np.ascontiguousarray(values, dtype=np.int32).copy()
        self.mpi.Allreduce(self._MPI.IN_PLACE, out, op=self._MPI.SUM)
        return out

    def any_sleeping(self, flag: bool, poll_s: float = 0.02) -> bool:
        """A non-blocking all-reduce tested every ``poll_s`` seconds, asleep in between: MPI's blocking calls
        poll without sleeping, so a rank waiting minutes for a cache build would spin a core. Every rank must
        make this call (a non-blocking collective never matches a blocking one)."""
        send = np.array([1 if flag else 0], dtype=np.int32)
        out = np.zeros(1, dtype=np.int32)
        request = self.mpi.Iallreduce(send, out, op=self._MPI.MAX)
        while not request.Test():
            time.sleep(poll_s)
        return bool(out[0])

    def sum_array(self, values: np.ndarray) -> np.ndarray:
        """Counted in ``allreduce_seconds``: synchronized BatchNormalization's share of communication."""
        start = time.perf_counter()
        out = np.ascontiguousarray(values, dtype=np.float32).copy()
        self.mpi.Allreduce(self._MPI.IN_PLACE, out, op=self._MPI.SUM)
        self.allreduce_seconds += time.perf_counter() - start
        return out


class MpiCpuComm(_MpiBase):
    """CPU data parallelism through mpi4py: gradients summed or averaged across ranks, with no copies.

    On the first all-reduce the communicator re-homes the gradients: consecutive parameters are packed
    into flat nnabla arrays ("buckets") of at most ``bucket_mb`` (a larger parameter gets a bucket of
    its own), and each parameter's ``grad`` becomes a view into its bucket (``NdArray.narrow``).
    Backward then writes straight into contiguous memory, and the all-reduce is an in-place
    ``Allreduce`` on a numpy view of each bucket: no packing, no unpacking, no per-tensor look-ups
    (those and the copies cost more than the 1 MB reduction itself: 0.19 ms against 0.005 ms now).
    A bucket's memory stays put: nnabla moves an array only when it is cleared, and only this
    communicator holds the buckets themselves. Every MPI message is at most ``bucket_mb``: Open MPI
    reduced 100 MB as one message 3-5x slower than as 2 MB pieces. Blocking ``Allreduce``: Open MPI's
    non-blocking collectives only progress inside MPI calls, so on one thread they overlapped nothing.
    With ``overlap`` (``multi_gpu.allreduce_overlap``) ``backward(reduce=True)`` hands each bucket to a
    communication thread as soon as backward has finished it (:mod:`nnconsole.engine.comm.overlap`).
    Figures: bench/allreduce.py, bench/link_overlap.py.

    The communicator owns the gradient arrays of the parameters it reduces. It keeps the plans of up to
    ``MAX_KEPT_PLANS`` parameter lists (one per optimizer) and plans again when it is given a new list or
    when another communicator has taken some of them over; code that assigns a parameter's ``grad`` by hand
    is not noticed.
    """

    # The trainer may scale the loss gradient by 1/N in backward and ask for a plain sum, which
    # saves the separate averaging pass over every gradient (exact when N is a power of two).
    sums_prescaled_gradients = True

    def __init__(self, mpi_comm: Any, bucket_mb: float = DEFAULT_BUCKET_MB, half: bool = False,
                 overlap: bool = False) -> None:
        super().__init__(mpi_comm)

        self.half = HalfPrecisionReducer(mpi_comm, self._MPI) if half else None  # float16 messages (comm_half)
        self.overlaps_backward = overlap
        self.name = "mpi-cpu" + (", float16 messages" if half else "") + (", overlapped with backward" if overlap else "")
        self._overlap: Optional[OverlappedBackward] = None
        if overlap:  # the thread's collectives run on a communicator of their own
            self._thread_mpi = mpi_comm.Dup()
            self._thread_half = HalfPrecisionReducer(self._thread_mpi, self._MPI) if half else None
            self._overlap = OverlappedBackward(self._bucket_views, self._reduce_bucket_in_thread)
            self._thread_average = True
        from nnabla_ext.cpu import context  # deferred: nnabla stays out of the launcher

        speed_up_nnabla_accessors()
        self._ctx = context()
        self._memory = getattr(self._MPI, "buffer", None) or self._MPI.memory  # mpi4py 4 / 3
        self.bucket_bytes = max(4, int((bucket_mb or DEFAULT_BUCKET_MB) * 1024 * 1024))
        self._buckets: List[Any] = []  # flat nnabla NdArrays that the parameters' gradients view
        self._gradients: List[List[Any]] = []  # per bucket: the NdArray views that are the parameters' grads
        self._views: List[List[np.ndarray]] = []  # per bucket: a numpy view of each message's floats
        self._token: Optional[object] = None
        self._planned: tuple = ()
        self._bucket_index: List[int] = []  # per planned parameter: its bucket
        self._plans_seen = -1
        self._kept: Dict[tuple, tuple] = {}  # ids of a parameter list -> its plan's fields (not the current one)

    def _plan_buckets(self, params: Sequence[Any]) -> None:
        """Pack the gradients into flat buckets and make every ``param.grad`` a view into its bucket."""
        import nnabla as nn  # deferred: nnabla stays out of the launcher

        self._keep_current_plan()
        limit = self.bucket_bytes // 4
        groups: List[List[Any]] = []
        used = limit
        for p in params:
            n = max(1, int(np.prod(p.shape)))
            if used + n > limit:
                groups.append([])
                used = 0
            groups[-1].append(p)
            used += n
        token = object()
        self._buckets, self._gradients, self._views = [], [], []
        self._bucket_index = [index for index, group in enumerate(groups) for _ in group]
        memory, f32 = self._memory, np.float32
        for group in groups:
            sizes = [max(1, int(np.prod(p.shape))) for p in group]
            flat = nn.NdArray((sum(sizes),))
            offset = 0
            views = []
            for p, n in zip(group, sizes):
                current = np.array(p.g, dtype=np.float32, copy=True)  # keep what backward already wrote
                p.grad = flat.narrow(0, offset, n).view(tuple(p.shape))
                p.g = current
                views.append(p.grad)
                _GRADIENT_OWNER[id(p)] = token
                offset += n
            self._buckets.append(flat)
            self._gradients.append(views)
            address = flat.data_ptr(f32, self._ctx)  # every message at most bucket_mb
            self._views.append([np.frombuffer(memory.fromaddress(address + 4 * first, 4 * min(limit, offset - first)),
                                              dtype=f32) for first in range(0, offset, limit)])
        self._token = token
        self._planned = tuple(params)
        _PLANS[0] += 1
        self._plans_seen = _PLANS[0]

    def _owns(self, params: Sequence[Any]) -> bool:
        """Whether the current plan covers exactly ``params`` and their gradients still view its buckets."""
        if self._token is None or tuple(params) != self._planned:  # identity first: ~0.5 us for 32
            return self._restore_plan(params)
        if self._plans_seen == _PLANS[0]:  # no other plan since ours
            return True
        token, owner = self._token, _GRADIENT_OWNER
        if all(owner.get(id(p)) is token for p in params):
            self._plans_seen = _PLANS[0]
            return True
        return False

    def _keep_current_plan(self) -> None:
        if self._token is not None:
            self._kept[tuple(map(id, self._planned))] = (self._token, self._planned, self._buckets, self._gradients,
                                                          self._views, self._bucket_index)
            while len(self._kept) > MAX_KEPT_PLANS:
                self._kept.pop(next(iter(self._kept)))  # the oldest

    def _restore_plan(self, params: Sequence[Any]) -> bool:
        """Make the kept plan of ``params`` current when its gradients still view its buckets."""
        key = tuple(map(id, params))
        kept = self._kept.pop(key, None)  # holds the parameters themselves, so their ids are still theirs
        if kept is None or kept[1] != tuple(params) or not all(_GRADIENT_OWNER.get(id(p)) is kept[0] for p in params):
            return False
        self._keep_current_plan()
        self._token, self._planned, self._buckets, self._gradients, self._views, self._bucket_index = kept
        self._plans_seen = _PLANS[0]
        return True

    def _bucket_views(self, index: int) -> List[np.ndarray]:
        """numpy views of bucket ``index``'s messages, ready to reduce.

        nnabla zeroes lazily: a gradient that ``zero_grad()`` cleared and backward did not reach is
        still pending, so its zeros are written first (its own ``data_ptr``; the check is 0.07 us).
        """
        f32, ctx = np.float32, self._ctx
        for grad in self._gradients[index]:
            if grad.zeroing:
                grad.data_ptr(f32, ctx)
        return self._views[index]

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
        if not self._owns(params):
            self._plan_buckets(params)
        if self.half is not None:
            self.half.reduce([v for index in range(len(self._buckets)) for v in self._bucket_views(index)], average)
        else:
            for index in range(len(self._buckets)):
                self._sum_views(self.mpi, self._bucket_views(index), average)
        self.allreduce_seconds += time.perf_counter() - start

    def _sum_views(self, mpi: Any, views: Sequence[np.ndarray], average: bool) -> None:
        in_place, op, scale = self._MPI.IN_PLACE, self._MPI.SUM, np.float32(1.0 / self.size)
        for view in views:
            mpi.Allreduce(in_place, view, op=op)
            if average:
                view *= scale

    def _reduce_bucket_in_thread(self, index: int) -> None:
        """The communication thread's reduction of bucket ``index`` (views prepared by the main thread)."""
        views = self._views[index]
        if self._thread_half is not None:
            self._thread_half.reduce(views, self._thread_average)
        else:
            self._sum_views(self._thread_mpi, views, self._thread_average)

    def backward(self, loss: Any, grad: float, params: Sequence[Any], reduce: bool = False,
                 average: bool = True) -> None:
        """Backward from ``loss``; with ``reduce`` and overlap on, the gradients come back reduced (the mean
        over ranks, ``average=False``: the sum), each bucket sent as soon as backward has finished it.
        ``allreduce_seconds`` counts only the wait after backward: the communication backward did not hide.
        """
        if not (reduce and self._overlap is not None):
            return super().backward(loss, grad, params, reduce, average)
        if not self._owns(params):
            self._plan_buckets(params)
        readiness = self._overlap.readiness(loss, self._token, self._planned, self._bucket_index, len(self._buckets))
        self._thread_average = average
        self.allreduce_seconds += self._overlap.run(loss, grad, readiness)


def create_communicator(bucket_mb: float = 0.0, require_mpi: bool = False, half_allreduce: bool = False,
                        overlap: bool = False) -> SingleComm:
    """The communicator a worker starts with: MPI on CPU when several ranks run, else a single process.

    A single-worker run started without any MPI launcher does not initialise MPI at all. GPU runs
    switch to ``comm_gpu.NcclGpuComm`` once their parameters exist (``nnconsole.engine.train.worker.run_worker``).
    ``half_allreduce``: the CPU all-reduce sends float16 (``multi_gpu.allreduce_precision: half``);
    ``overlap``: it runs on a thread during backward (``multi_gpu.allreduce_overlap``) when the ranks span
    several hosts.
    """
    if not require_mpi and not launched_by_mpi():
        return SingleComm()
    world = mpi_world()
    if world is not None and overlap and host_count(world) == 1 and not seam("overlap_on_one_host"):
        overlap = False  # one host: the all-reduce is a memory copy by the cores that compute (bench/link_overlap.py)
    if world is None:
        if require_mpi:
            raise CommError("this worker was asked to train with several processes but MPI reports a single "
                            "process: mpiexec and mpi4py belong to different MPI installations")
        return SingleComm()
    return MpiCpuComm(world, bucket_mb or DEFAULT_BUCKET_MB, half=half_allreduce, overlap=overlap)
