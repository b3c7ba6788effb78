"""The prefetcher announces batches ahead (engine/train/prefetch.py ``start``/``ahead``, issue 31): each item once,
in order, ``ahead`` items before it is made, with and without the background thread."""
from __future__ import annotations

import threading

import pytest

from nnconsole.engine.train.prefetch import Prefetcher


@pytest.mark.parametrize("depth", [0, 2])
def test_items_are_announced_once_in_order_ahead_of_being_made(depth):
    events = []
    lock = threading.Lock()

    def start(i):
        with lock:
            events.append(("start", i))

    def make(i):
        with lock:
            events.append(("make", i))
            started = [j for kind, j in events if kind == "start"]
        assert started == list(range(min(i + 3, 10)))  # announced through i + 2 before i is made
        return i

    with Prefetcher(make, range(10), depth=depth, start=start, ahead=2) as ahead:
        assert list(ahead) == list(range(10))
    assert [j for kind, j in events if kind == "start"] == list(range(10))


def test_a_failing_announcement_is_raised_at_its_batch():
    def start(i):
        if i == 4:
            raise OSError("cannot start")
    with Prefetcher(lambda i: i, range(10), depth=2, start=start, ahead=1) as ahead:
        assert [next(ahead) for _ in range(3)] == [0, 1, 2]
        with pytest.raises(OSError, match="cannot start"):
            next(ahead)
