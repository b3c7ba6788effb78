"""Garbage collection happens on the GUI thread only (nnconsole.app.shell.main_thread_gc).

A worker thread that crossed gc's threshold collected an earlier test's unreachable Qt wrappers:
QObject::~QObject waited for a Qt lock the GUI thread held while it waited for the GIL, and a CI run
froze in tests/gui/training/test_tabs_training.py (the check before Run's thread, in _parse_records).
"""
from __future__ import annotations

import gc
import threading
import weakref

from nnconsole.app.shell.main_thread_gc import MainThreadCollector, suspended
from tests.support.timing import budget


class Cycle:
    def __init__(self) -> None:
        self.me = self


def _collections_by_thread(action) -> list:
    seen = []

    def note(phase, info):
        if phase == "start":
            seen.append(threading.current_thread().name)
    gc.callbacks.append(note)
    try:
        action()
    finally:
        gc.callbacks.remove(note)
    return seen


def test_a_worker_thread_never_collects_and_the_gui_thread_does(qtbot, qapp):
    # conftest's main_thread_gc fixture is active: automatic collection is off for this test
    assert not gc.isenabled()
    garbage = [Cycle() for _ in range(2 * gc.get_threshold()[0])]  # enough to cross the first threshold
    alive = [weakref.ref(c) for c in garbage]
    del garbage

    def allocate_in_a_worker() -> None:
        worker = threading.Thread(target=lambda: [[{} for _ in range(50)] for _ in range(2000)], name="worker")
        worker.start()
        worker.join()
    assert "worker" not in _collections_by_thread(allocate_in_a_worker)  # with gc on, it collected there
    assert any(ref() is not None for ref in alive)  # nothing collected them yet
    # Collection is driven by allocations, as Python's own is: a GUI allocates as it runs, so the wait does too.
    # Without that, objects of earlier tests freed while it waits (deleteLater) lower gen 0's count below the
    # threshold again and nothing is due (seen under pytest-xdist beside other work).
    running = []

    def collected() -> bool:
        running.append([[] for _ in range(100)])
        return all(ref() is None for ref in alive)
    seen = _collections_by_thread(lambda: qtbot.waitUntil(collected, timeout=int(budget(20) * 1000)))
    assert seen and set(seen) == {threading.main_thread().name}


def test_the_collector_follows_pythons_thresholds_and_restores_automatic_collection(qapp):
    gc.enable()
    gc.collect()
    with suspended(qapp) as collector:
        assert not gc.isenabled()
        assert collector.check() == 0  # below the first threshold: nothing to do
        [Cycle() for _ in range(collector.threshold[0] + 10)]
        assert collector.check() >= collector.threshold[0]  # the cycles, found by generation 0
    assert gc.isenabled()


def test_a_collector_restores_a_disabled_gc_as_disabled(qapp):
    gc.disable()
    try:
        collector = MainThreadCollector(qapp)
        collector.stop()
        assert not gc.isenabled()
    finally:
        gc.enable()
