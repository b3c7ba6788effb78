"""The GPU communicator: nnabla-ext-cuda's NCCL data-parallel communicator, gradients averaged with the
all-reduce overlapping backward, and the limits of nnabla's all-reduce callback pool.

A worker switches to ``NcclGpuComm`` once its parameters exist (``nnconsole.engine.train.worker.run_worker``);
rank, size and local rank come from the MPI communicator as in :mod:`nnconsole.engine.comm.cpu`.
"""
from __future__ import annotations

import time
from typing import Any, Dict, List, Optional, Sequence

from nnconsole.engine.comm.cpu import _MpiBase
from nnconsole.engine.backend.mpi import CommError
from nnconsole.engine.backend.device import check_nccl_device, nccl_library
from nnconsole.engine.backend.gpu_libs import nccl_failure_hint

# nnabla-ext-cuda 1.39's AllReduceCallback carves a fixed 40 MiB device pool into buffers of
# pack_size elements (libnnabla_cuda-120_8.so, all_reduce_callback<float>: 10485760 / pack buffers,
# i.e. 40 MiB / sizeof(float) / pack) and pops one at once: a pack that leaves 0 buffers pops an
# empty std::queue (a crash). 2 << 20 elements is what nnabla's own cli/train.py passes.
NNABLA_CUDA_PACK_POOL_BYTES = 40 << 20
NCCL_PACK_ELEMENTS = 2 << 20
# On GPU the all-reduce overlaps backward, so its cost is measured as the extra time of an overlapped
# backward over a plain one; every COMM_PROBE_INTERVAL-th all-reducing backward runs without overlap
# to refresh the plain backward time (and to time the whole all-reduce on its own).
COMM_PROBE_INTERVAL = 50


def parameter_uses(loss: Any, params: Sequence[Any]) -> List[int]:
    """How many function inputs of ``loss``'s graph each of ``params`` is (0: this loss does not reach it).

    nnabla-ext-cuda's all-reduce callback packs a parameter's gradient once per function that takes it.
    """
    index = {hash(p): i for i, p in enumerate(params)}
    uses = [0] * len(params)

    def count(function: Any) -> None:
        for variable in function.inputs:
            i = index.get(hash(variable))
            if i is not None:
                uses[i] += 1

    loss.visit(count)
    return uses


class _GraphFacts:
    """What ``NcclGpuComm`` keeps per loss graph: shared parameters, and the latest plain backward time."""

    def __init__(self, loss: Any, params: Sequence[Any]) -> None:
        self.loss = loss  # held: the graph (and the hash used as its key) stays alive
        self.params = tuple(params)
        self.shares_parameters = any(n > 1 for n in parameter_uses(loss, params))
        self.plain_backward_seconds: Optional[float] = None  # this network's backward without communication
        self.reducing_backwards = 0


class NcclGpuComm(_MpiBase):
    """GPU data parallelism with nnabla-ext-cuda's NCCL communicator (gradients averaged).

    Gradients are all-reduced inside backward through nnabla's callback, except for a network whose graph
    uses some parameter more than once (an RNN's unrolled steps, a GAN's shared layers): nnabla's callback
    "does not support shared parameters" (its docstring in communicator.pyx) because it packs a gradient at
    each use and may all-reduce a full pack while backward still accumulates into the same gradient. Such
    a network's gradients are all-reduced once, after backward, in one call.
    """

    name = "nccl-gpu"
    overlaps_backward = True

    def __init__(self, mpi_comm: Any, ctx: Any, params: Dict[str, Any]) -> None:
        super().__init__(mpi_comm)

        try:
            import nnabla.communicators as C  # deferred: nnabla stays out of the launcher
            comm = C.MultiProcessDataParallelCommunicator(ctx)
            comm.add_context_and_parameters((ctx, params))
            comm.init()
        except Exception as exc:
            hint = nccl_failure_hint(nccl_library())
            raise CommError(f"cannot create the NCCL communicator on rank {self.rank}: {exc}. {hint}") from None
        if comm.size != self.size:
            raise CommError(f"nnabla's communicator sees {comm.size} processes but MPI has {self.size}: "
                            "nnabla-ext-cuda is not using the same MPI as mpiexec")
        check_nccl_device(comm.local_rank, ctx)  # nnabla's init() set the GPU of its local rank
        self.nccl = comm
        # sizeof(float) bounds both float and half gradients (nnabla's arithmetic above).
        self.pack_size = checked_pack_elements(NCCL_PACK_ELEMENTS, 4)
        self._synchronize = device_synchronizer(ctx)
        self._graphs: Dict[int, _GraphFacts] = {}  # hash(loss) -> its facts (a GAN has two networks)

    def graph_facts(self, loss: Any, params: Sequence[Any]) -> _GraphFacts:
        """The (cached) facts of ``loss``'s graph for this parameter list."""
        found = self._graphs.get(hash(loss))
        if found is None or found.loss is not loss or found.params != tuple(params):
            found = self._graphs[hash(loss)] = _GraphFacts(loss, params)
        return found

    def broadcast_parameters(self, params: Dict[str, Any]) -> None:
        self.nccl.bcast([params[k].data for k in sorted(params)], src=0, inplace=True)

    def backward_callback(self, params: Sequence[Any]) -> Any:
        """A new all-reduce callback (gradients averaged) for ONE backward.

        nnabla's callback is single-use: its last, partly filled pack keeps raw pointers to the
        gradients of the backward it served, which ``zero_grad`` frees; a reused callback writes
        into freed GPU memory. nnabla's own cli/train.py makes one per all-reducing backward too.
        """
        return self.nccl.all_reduce_callback([p.grad for p in params], self.pack_size, division=True)

    def backward(self, loss: Any, grad: float, params: Sequence[Any], reduce: bool = False,
                 average: bool = True) -> None:
        """Backward from ``loss``; with ``reduce`` the gradients come out averaged over ranks (NCCL's callback
        always averages: the trainer never pre-scales on GPU, ``sums_prescaled_gradients`` is False).

        Times every backward with the device synchronised (the loop reads the loss right after, so
        this adds little waiting). Per network (a GAN's generator and discriminator differ): the all-reduce's
        share is the extra time of an overlapped backward over that network's latest plain one, and every
        ``COMM_PROBE_INTERVAL``-th all-reducing backward of it (and the first) runs plain and then all-reduces
        on its own, which times both parts directly. A network with shared parameters always runs that way.
        """
        sync, clock = self._synchronize, time.perf_counter
        facts = self.graph_facts(loss, params)
        start = clock()
        if not reduce:
            loss.backward(grad, clear_buffer=True)
            sync()
            facts.plain_backward_seconds = clock() - start
            return
        facts.reducing_backwards += 1
        if facts.shares_parameters or facts.plain_backward_seconds is None or \
                facts.reducing_backwards % COMM_PROBE_INTERVAL == 0:
            loss.backward(grad, clear_buffer=True)
            sync()
            middle = clock()
            facts.plain_backward_seconds = middle - start
            self.nccl.all_reduce([p.grad for p in params], division=True, inplace=False)
            sync()
            self.allreduce_seconds += clock() - middle
            return
        loss.backward(grad, clear_buffer=True, communicator_callbacks=self.backward_callback(params))
        sync()
        self.allreduce_seconds += max(0.0, clock() - start - facts.plain_backward_seconds)

    def average_persistent(self, params: Sequence[Any]) -> None:
        """Mean over ranks of non-learned state, on the GPU through NCCL (nnabla's all_reduce)."""
        if params:
            self.nccl.all_reduce([p.data for p in params], division=True, inplace=False)

    def all_reduce_gradients(self, params: Sequence[Any], average: bool = True) -> None:
        start = time.perf_counter()
        self.nccl.all_reduce([p.grad for p in params], division=average, inplace=False)
        self.allreduce_seconds += time.perf_counter() - start


def device_synchronizer(ctx: Any) -> Any:
    """A function that waits until the GPU of ``ctx`` has finished its queued work (NCCL's included)."""
    from nnabla_ext.cuda import synchronize  # deferred: nnabla stays out of the launcher

    device_id = str(getattr(ctx, "device_id", "0") or "0")
    return lambda: synchronize(device_id=device_id)


def time_nccl_all_reduce(comm: Any, nbytes: int, synchronize: Any, warmup: int = 3, reps: int = 10) -> float:
    """Seconds per in-place, averaging ``all_reduce`` of one float array of ``nbytes`` through the NCCL
    communicator (the slowest rank's mean over ``reps`` after ``warmup``): nccl-tests' measurement, shared
    by ``doctor``'s smoke test and the GPU test plan so their bandwidths mean the same."""
    import nnabla as nn  # deferred: nnabla stays out of the launcher

    data = nn.NdArray((nbytes // 4,))
    data.fill(1.0)
    for _ in range(warmup):
        comm.nccl.all_reduce([data], division=True, inplace=True)
    synchronize()
    comm.mpi.Barrier()
    start = time.perf_counter()
    for _ in range(reps):
        comm.nccl.all_reduce([data], division=True, inplace=True)
    synchronize()
    return comm.mpi.allreduce((time.perf_counter() - start) / reps, op=_max_op())


def bus_bandwidth_gbs(nbytes: int, seconds: float, workers: int) -> float:
    """nccl-tests' bus bandwidth of an all-reduce: 2(N-1)/N x bytes / time, in GB/s (0 for one worker)."""
    return 2 * (workers - 1) / workers * nbytes / seconds / 1e9 if workers > 1 else 0.0


def _max_op() -> Any:
    from mpi4py import MPI  # deferred: mpi4py stays out of the launcher

    return MPI.MAX


def nccl_pack_buffers(pack_elements: int, element_bytes: int) -> int:
    """How many pack buffers nnabla-ext-cuda's all-reduce callback gets from its 40 MiB pool."""
    return NNABLA_CUDA_PACK_POOL_BYTES // element_bytes // max(1, int(pack_elements))


def checked_pack_elements(pack_elements: int, element_bytes: int) -> int:
    """``pack_elements`` if nnabla's callback pool holds at least one such pack, else ValueError."""
    if int(pack_elements) * element_bytes > NNABLA_CUDA_PACK_POOL_BYTES or \
            nccl_pack_buffers(pack_elements, element_bytes) < 1:
        raise ValueError(f"all-reduce pack of {pack_elements} x {element_bytes}-byte elements does not fit "
                         "nnabla-ext-cuda's 40 MiB callback pool (it would pop an empty buffer queue)")
    return int(pack_elements)
