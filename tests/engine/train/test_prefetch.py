"""Batches prepared ahead (engine/train/prefetch.py, issue 18): order, bound, errors surfacing, stopping, same results."""
from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import pytest

from nnconsole.engine.data import mapped_pages
from nnconsole.engine.train import prefetch
from nnconsole.engine.train.prefetch import Prefetcher
from nnconsole.engine.check.project_file import load_valid_project
from tests.support.paths import TEMPLATES
from tests.support.timing import budget

DIGITS = Path(TEMPLATES) / "digits_cnn"


def test_items_come_in_order_from_a_background_thread():
    threads = set()

    def make(i):
        threads.add(threading.current_thread().name)
        return i * i
    with Prefetcher(make, range(50), depth=3, name="ahead") as ahead:
        assert list(ahead) == [i * i for i in range(50)]
    assert threads == {"ahead"}
    with Prefetcher(make, range(5), depth=0) as inline:  # depth 0: made in the caller's thread
        assert list(inline) == [0, 1, 4, 9, 16]
    assert threading.current_thread().name in threads


def test_the_queue_is_bounded():
    made = []
    ahead = Prefetcher(lambda i: made.append(i) or i, range(100), depth=2)
    time.sleep(0.3)
    # two waiting in the queue, one made and waiting for room: never the whole epoch
    assert len(made) <= 3
    assert next(ahead) == 0
    time.sleep(0.2)
    assert len(made) <= 4
    ahead.close()


def test_an_error_in_the_thread_is_raised_in_the_consumer_with_its_message():
    def make(i):
        if i == 3:
            raise ValueError("sample 3 is unreadable: disk on fire")
        return i
    ahead = Prefetcher(make, range(10), depth=2)
    assert [next(ahead) for _ in range(3)] == [0, 1, 2]
    with pytest.raises(ValueError, match="^sample 3 is unreadable: disk on fire$") as info:
        next(ahead)
    assert any(frame.name == "make" for frame in info.traceback)  # the original traceback, where it happened
    assert ahead._thread is not None and not ahead._thread.is_alive()
    with pytest.raises(StopIteration):
        next(ahead)


def test_small_batches_are_gathered_in_the_training_thread():
    # bench/data_wait.py (issue 31): with the page window, the digits' 64 kB batches wait 1.3% inline, 4.5% ahead
    assert prefetch.training_depth(32 * 64 * 4) == 0  # the digits CNN: 8 kB per batch
    assert prefetch.training_depth(256 * 64 * 4) == 0  # and 64 kB at batch 256
    assert prefetch.training_depth(64 * 3 * 32 * 32 * 4) == prefetch.TRAINING_DEPTH  # CIFAR-sized: 786 kB


def test_close_stops_a_producer_waiting_on_a_full_queue():
    ahead = Prefetcher(lambda i: i, range(1000), depth=1)
    assert next(ahead) == 0
    started = time.monotonic()
    ahead.close()
    assert not ahead._thread.is_alive()
    assert time.monotonic() - started < budget(2)
    ahead.close()  # twice is fine
    with pytest.raises(ValueError, match="depth"):
        Prefetcher(lambda i: i, [], depth=-1)


@pytest.mark.slow
def test_training_with_prefetch_gives_the_same_parameters_as_without(tmp_path, monkeypatch):
    import nnabla as nn

    from tests.support.training import final_params, train_in_process

    shutil.copytree(DIGITS, tmp_path / "digits")
    results = {}
    # depth 0 with pages dropped after every batch: how batches this small were made before issue 31; depth 3
    # (prefetched whatever their size) with the default page window: the digits' cache never dropped
    for depth, window in ((0, 0), (3, mapped_pages.UNMAP_WINDOW_BYTES)):
        monkeypatch.setattr(prefetch, "TRAINING_DEPTH", depth)
        monkeypatch.setattr(prefetch, "MIN_PREFETCH_BYTES", 0)
        monkeypatch.setattr(mapped_pages, "UNMAP_WINDOW_BYTES", window)
        project = load_valid_project(str(tmp_path / "digits" / "project.yaml"))
        project.config.max_epoch = 2
        run_dir, losses = train_in_process(project, str(tmp_path / f"results{depth}"))
        results[depth] = (losses, final_params(run_dir))
    nn.clear_parameters()
    assert results[0][0] == results[3][0]
    for k, v in results[0][1].items():
        assert v.tobytes() == results[3][1][k].tobytes(), k
    assert not [t for t in threading.enumerate() if t.name.startswith("prefetch-rank")]
