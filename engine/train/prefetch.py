"""Batches prepared ahead: a background thread gathers and normalises the next batches while the current one
trains, so data work overlaps compute (issue 18).

The queue is bounded (``depth`` batches), the order is the order given, and a failure in the thread is
raised in the consumer as the same exception (type, message and traceback), at the batch it happened on.
With ``start``, the items ``ahead`` beyond the one being made are announced first (``start(item)``, once each):
images decoded on the fly then decode in the decode processes while earlier batches train (issue 31).
"""
from __future__ import annotations

import queue
import threading
from typing import Callable, Generic, Iterator, Optional, Sequence, Tuple, TypeVar

In = TypeVar("In")
Out = TypeVar("Out")

_END = object()
TRAINING_DEPTH = 2  # batches the trainer prepares ahead (0: none, each batch made when it is needed)
# Below this many bytes per batch, gathering costs less than handing a batch between threads: the producer
# thread needs the GIL while nnabla's forward holds it. Measured again after issue 31's page window
# (bench/data_wait.py, digits CNN at batch 256 on 8x8 images, 64 kB batches, 1 worker, two runs at load 6 and
# 15): data wait 1.3% / 1.2% of an iteration gathered here, 4.5% / 4.3% prefetched.
MIN_PREFETCH_BYTES = 256 * 1024
PUT_POLL_S = 0.1  # how often a producer blocked on a full queue checks that the consumer still wants batches


def training_depth(batch_bytes: int) -> int:
    """How many batches the trainer prepares ahead for float32 batches of ``batch_bytes``."""
    return TRAINING_DEPTH if batch_bytes >= MIN_PREFETCH_BYTES else 0


class Prefetcher(Generic[In, Out]):
    """``make(item)`` for each of ``items``, computed up to ``depth`` items ahead in one background thread.

    Iterate it (or call ``next``) in the training thread; ``close`` (or leaving a ``with`` block) stops
    the thread, also when not every batch was taken (a stop request). ``depth=0`` computes each item in
    the consumer's thread when it is asked for: the same results, no overlap.
    """

    def __init__(self, make: Callable[[In], Out], items: Sequence[In], depth: int = 2, name: str = "prefetch",
                 start: Optional[Callable[[In], None]] = None, ahead: int = 0):
        if depth < 0 or ahead < 0:
            raise ValueError(f"prefetch depth and ahead must be >= 0, got {depth} and {ahead}")
        self._start = start
        self._ahead = ahead
        self._started = 0  # items announced to ``start``
        self._make = make
        self._items = list(items)
        self._depth = depth
        self._next = 0
        self._closed = threading.Event()
        self._queue: "queue.Queue[Tuple[object, Optional[BaseException]]]" = queue.Queue(maxsize=max(depth, 1))
        self._thread: Optional[threading.Thread] = None
        if depth > 0 and self._items:
            self._thread = threading.Thread(target=self._produce, name=name, daemon=True)
            self._thread.start()

    def _put(self, entry: Tuple[object, Optional[BaseException]]) -> bool:
        while not self._closed.is_set():
            try:
                self._queue.put(entry, timeout=PUT_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def _made(self, i: int) -> Out:
        """``make(items[i])``, items up to ``ahead`` beyond it announced to ``start`` first."""
        if self._start is not None:
            end = min(len(self._items), i + 1 + self._ahead)
            while self._started < end:
                self._start(self._items[self._started])
                self._started += 1
        return self._make(self._items[i])

    def _produce(self) -> None:
        for i in range(len(self._items)):
            if self._closed.is_set():
                return
            try:
                made: object = self._made(i)
            except BaseException as exc:  # noqa: BLE001 - handed to the consumer, raised there
                self._put((None, exc))
                return
            if not self._put((made, None)):
                return
        self._put((_END, None))

    def __iter__(self) -> Iterator[Out]:
        return self

    def __next__(self) -> Out:
        if self._closed.is_set() or self._next >= len(self._items):
            raise StopIteration
        if self._thread is None:
            made = self._made(self._next)
        else:
            value, error = self._queue.get()
            if error is not None:
                self.close()
                raise error
            if value is _END:  # pragma: no cover - the count above ends iteration first
                raise StopIteration
            made = value  # type: ignore[assignment]
        self._next += 1
        return made  # type: ignore[return-value]

    def close(self) -> None:
        """Stop the background thread and drop what it prepared; safe to call twice."""
        self._closed.set()
        if self._thread is not None:
            self._thread.join()
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break

    def __enter__(self) -> "Prefetcher[In, Out]":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
