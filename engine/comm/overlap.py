"""The CPU all-reduce overlapped with backward: each bucket is reduced as soon as backward has finished it.

nnabla computes a parameter's gradient in backward's last visit of a function that takes the parameter; from
then on backward never writes it again. ``BucketReadiness`` counts, once per graph, how many functions use
each parameter of each bucket (``loss.visit``), and nnabla's ``function_post_hook`` counts them down during
backward: a bucket whose count reaches zero is final. ``CommThread`` then all-reduces it on its own thread
while backward goes on with earlier layers. Backward visits functions from the loss towards the inputs, so
the last layers' buckets (in a CNN, where most parameters are) leave first and the first layers' compute
hides their transfer. Buckets no hook completed (a parameter this loss does not reach) are reduced after
backward returns, in bucket order; every rank sees the same graph, so every rank submits the same buckets in
the same order, which collectives require.

Why a thread: Open MPI's non-blocking collectives progress only inside MPI calls, so ``Iallreduce`` started
from the hook would not move while nnabla computes (bench/README.md, section 2). nnabla releases the GIL in
forward and backward, and mpi4py releases it in ``Allreduce``; Open MPI is initialised with
``MPI_THREAD_MULTIPLE`` (mpi4py's default). The thread reduces on a duplicate of the workers' communicator, so
its collectives never interleave with the main thread's (metrics, stop flags, synchronised
BatchNormalization). The main thread waits for every bucket before backward returns: the solver never sees a
gradient that is still travelling.
"""
from __future__ import annotations

import queue
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

WAIT_SLICE_S = 0.5  # the main thread wakes this often while it waits (signals are handled in between)


class BucketReadiness:
    """Which buckets a function's backward completes, for one loss graph and one bucket plan."""

    def __init__(self, loss: Any, bucket_of: Dict[int, int], buckets: int) -> None:
        """``bucket_of``: hash of each parameter Variable -> its bucket index."""
        self.loss = loss  # held, so that the graph (and the function addresses used as keys) stay alive
        self.completes: Dict[int, List[int]] = {}  # hash(function) -> the bucket of each parameter input it has
        self.uses = [0] * buckets  # per bucket: how many function inputs are its parameters

        def count(function: Any) -> None:
            hits = [bucket_of[h] for h in (hash(v) for v in function.inputs) if h in bucket_of]
            if hits:
                self.completes[hash(function)] = hits
                for index in hits:
                    self.uses[index] += 1

        loss.visit(count)


class CommThread:
    """A daemon thread that runs the bucket reductions it is given, in order; errors come back to ``wait``."""

    def __init__(self, reduce_bucket: Callable[[int], None], name: str = "allreduce") -> None:
        self._reduce = reduce_bucket
        self._jobs: "queue.SimpleQueue[Optional[int]]" = queue.SimpleQueue()
        self._done: "queue.SimpleQueue[Tuple[int, Optional[BaseException]]]" = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()
        self.pending = 0

    def _loop(self) -> None:
        while True:
            index = self._jobs.get()
            if index is None:
                return
            try:
                self._reduce(index)
            except BaseException as exc:  # noqa: BLE001 - handed to the main thread, which raises it
                self._done.put((index, exc))
            else:
                self._done.put((index, None))

    def submit(self, index: int) -> None:
        self.pending += 1
        self._jobs.put(index)

    def wait(self) -> None:
        """Block until every submitted bucket is reduced; re-raise the first error a reduction raised."""
        error: Optional[BaseException] = None
        while self.pending:
            try:
                _, exc = self._done.get(timeout=WAIT_SLICE_S)
            except queue.Empty:
                if not self._thread.is_alive():
                    raise RuntimeError("the all-reduce thread ended with reductions outstanding") from None
                continue
            self.pending -= 1
            error = error or exc
        if error is not None:
            raise error

    def close(self) -> None:
        self._jobs.put(None)


class OverlappedBackward:
    """Backward with the communicator's buckets all-reduced by ``CommThread`` as they become final."""

    def __init__(self, prepare_bucket: Callable[[int], None], reduce_bucket: Callable[[int], None]) -> None:
        """``prepare_bucket`` runs on the main thread before a bucket leaves (nnabla state, not thread-safe);
        ``reduce_bucket`` runs on the communication thread."""
        self._prepare = prepare_bucket
        self._thread = CommThread(reduce_bucket)
        self._graphs: Dict[Tuple[int, object], BucketReadiness] = {}

    def readiness(self, loss: Any, plan: object, params: Sequence[Any], bucket_index: Sequence[int],
                  buckets: int) -> BucketReadiness:
        """The (cached) readiness counts of ``loss``'s graph under the bucket plan ``plan``."""
        key = (hash(loss), plan)
        found = self._graphs.get(key)
        if found is None or found.loss is not loss:
            if len(self._graphs) > 16:  # graphs of an old plan
                self._graphs.clear()
            found = BucketReadiness(loss, {hash(p): i for p, i in zip(params, bucket_index)}, buckets)
            self._graphs[key] = found
        return found

    def run(self, loss: Any, grad: float, readiness: BucketReadiness) -> float:
        """``loss.backward`` with every bucket submitted once, the last ones after backward; waits for all.

        Returns the seconds spent waiting after backward: the communication that backward did not hide.
        """
        remaining = list(readiness.uses)
        sent = [False] * len(remaining)
        completes, thread, prepare = readiness.completes, self._thread, self._prepare

        def finished(function: Any) -> None:
            hits = completes.get(hash(function))
            if hits is None:
                return
            for index in hits:
                remaining[index] -= 1
                if remaining[index] == 0 and not sent[index]:
                    sent[index] = True
                    prepare(index)
                    thread.submit(index)

        try:
            loss.backward(grad, clear_buffer=True, function_post_hook=finished)
            backward_done = time.perf_counter()
            for index, done in enumerate(sent):
                if not done:
                    sent[index] = True
                    prepare(index)
                    thread.submit(index)
        finally:
            thread.wait()
        return time.perf_counter() - backward_done

    def close(self) -> None:
        self._thread.close()
