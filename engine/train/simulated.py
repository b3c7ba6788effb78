"""N workers simulated exactly in one process (``nnconsole train --simulate-workers N``, issue 30).

``SimulatedComm`` stands where an N-rank communicator stands: the trainer sees ``size`` N and plans as N
workers do (per-worker batch, logical batch, LR scaling, divided intervals and multiplier), and runs every
iteration once per simulated worker (``simulated_ranks``), one after another, each on its own micro-batch:

- the same rows as rank r of a real run (``worker_batches(order, B, r, N)``), the same generated inputs
  (keyed by the row's slot in the logical batch) and the same random layers (a graph built with rank r);
- the same gradient: each micro-batch's backward is scaled by 1/(U x N), as a real CPU run's is before its
  all-reduce sums; nnabla accumulates the N micro-gradients into the parameters' gradients, which is the
  sum that all-reduce would have made, so ``all_reduce_gradients`` has nothing left to do;
- BatchNormalization: batch statistics come from each micro-batch alone (a graph of the per-worker batch,
  as on N devices); every simulated worker keeps its own running statistics (``as_worker`` swaps them in
  around its forward passes), and ``average_persistent`` replaces them by their mean in float64 as
  ``MpiCpuComm.average_persistent`` does across ranks, at the same moments.

Metrics, validation and the checks at the end reduce over ranks through ``sum``/``max``/``any``: the trainer
already gathers every simulated worker's share in this process, so they return their input.
BatchNormalization synchronized across workers needs every worker's batch in one forward pass, which
sequential micro-batches cannot give: ``sum_array`` refuses it with a message naming the fix.
"""
from __future__ import annotations

from contextlib import contextmanager, nullcontext
from typing import Any, Dict, Iterator, List, Sequence

import numpy as np

from nnconsole.engine.comm.cpu import SingleComm
from nnconsole.engine.errors import TrainingError

SYNC_BN_MESSAGE = ("--simulate-workers cannot simulate BatchNormalization synchronized across workers "
                   "(sync_across_workers: true): its statistics need every worker's batch in one forward pass. "
                   "Set sync_across_workers to false on the BatchNormalization layers, or train on real workers "
                   "(--gpus N)")


class SimulatedComm(SingleComm):
    """The communicator of ``workers`` workers simulated in this process (module docstring).

    ``inner``: the communicator of the real processes (M of them, each simulating N / M consecutive ranks:
    process p the ranks p x N/M ...); the sums over the simulated workers of this process then go through
    it, so N = k x M workers on M processes are as exact as N on one.
    """

    sums_prescaled_gradients = True  # backward scales by 1/(U x N); accumulation is the sum

    def __init__(self, workers: int, inner: Any = None) -> None:
        super().__init__()
        self.inner = inner if inner is not None else SingleComm()
        if int(workers) < 1 or int(workers) % self.inner.size:
            raise ValueError(f"simulated workers must be a positive multiple of the {self.inner.size} processes, "
                             f"got {workers!r}")
        self.size = int(workers)
        self.rank, self.local_rank = self.inner.rank, self.inner.local_rank
        per_process = self.size // self.inner.size
        self.simulated_ranks: List[int] = [self.rank * per_process + j for j in range(per_process)]
        self.name = (f"simulated ({self.size} workers in one process)" if self.inner.size == 1 else
                     f"simulated ({self.size} workers, {per_process} in each of {self.inner.size} processes; "
                     f"{self.inner.name} between them)")
        self._persistent: List[Any] = []
        self._states: Dict[int, List[np.ndarray]] = {}  # simulated rank -> its running statistics

    @property
    def allreduce_seconds(self) -> float:  # type: ignore[override]
        return self.inner.allreduce_seconds

    @allreduce_seconds.setter
    def allreduce_seconds(self, value: float) -> None:
        pass  # the inner communicator counts its own

    # ---- running statistics of each simulated worker ----------------------------------------------
    def bind_persistent(self, params: Sequence[Any]) -> None:
        """Start every simulated worker from the present values of ``params`` (after set-up and resume)."""
        self._persistent = list(params)
        values = [np.array(p.d, dtype=np.float32, copy=True) for p in self._persistent]
        self._states = {r: [v.copy() for v in values] for r in self.simulated_ranks}

    @contextmanager
    def as_worker(self, rank: int) -> Iterator[None]:
        """Forward passes inside run on simulated worker ``rank``'s running statistics, which keep their updates."""
        if not self._persistent:
            yield
            return
        state = self._states[rank]
        for p, value in zip(self._persistent, state):
            p.d = value
        try:
            yield
        finally:
            for i, p in enumerate(self._persistent):
                state[i] = np.array(p.d, dtype=np.float32, copy=True)

    def average_persistent(self, params: Sequence[Any]) -> None:
        """Every simulated worker's running statistics replaced by their mean (float64, as across ranks)."""
        if not self._persistent:
            return
        totals = [np.zeros(p.shape, dtype=np.float64) for p in self._persistent]
        for state in self._states.values():
            for total, value in zip(totals, state):
                total += value
        if self.inner.size > 1:  # the other processes' simulated workers: one float64 message
            flat = self.inner.sum(np.concatenate([t.ravel() for t in totals]))
            offset = 0
            for i, total in enumerate(totals):
                totals[i] = flat[offset:offset + total.size].reshape(total.shape)
                offset += total.size
        for i, (p, total) in enumerate(zip(self._persistent, totals)):
            mean = (total / self.size).astype(np.float32)
            p.d = mean
            for state in self._states.values():
                state[i] = mean.copy()

    # ---- reductions: the trainer has this process's simulated workers' shares already ---------------
    def all_reduce_gradients(self, params: Sequence[Any], average: bool = True) -> None:
        """The accumulated prescaled micro-gradients are this process's part of the sum (``average=False``)
        asked for: summed over the real processes, if several."""
        if average:
            raise TrainingError("internal: a simulated run accumulates gradients prescaled by 1/N and cannot "
                                "average them afterwards")
        if self.inner.size > 1:
            self.inner.all_reduce_gradients(params, average=False)

    def broadcast_parameters(self, params: Any) -> None:
        self.inner.broadcast_parameters(params)

    def sum(self, values: Sequence[float]) -> np.ndarray:
        return self.inner.sum(values)

    def max(self, values: Sequence[float]) -> np.ndarray:
        return self.inner.max(values)

    def any(self, flag: bool) -> bool:
        return self.inner.any(flag)

    def any_sleeping(self, flag: bool) -> bool:
        return self.inner.any_sleeping(flag)

    def sum_counts(self, values: np.ndarray) -> np.ndarray:
        return self.inner.sum_counts(values)

    def sum_array(self, values: np.ndarray) -> np.ndarray:
        raise TrainingError(SYNC_BN_MESSAGE)


def worker_context(comm: Any, rank: int) -> Any:
    """``comm.as_worker(rank)`` where the communicator simulates workers, else a context that does nothing."""
    as_worker = getattr(comm, "as_worker", None)
    return as_worker(rank) if as_worker is not None else nullcontext()
