"""The index build pauses Python's cyclic collector only on the main thread: the switch is process-wide, so a
build in a GUI's background thread (the DATASET tab's check) must leave it alone, or its end would turn
automatic collection back on under the GUI's main-thread-only collector."""
from __future__ import annotations

import gc
import threading

from nnconsole.engine.data.index import build_index
from tests.support.image_projects import write_cycled_csv

SHAPES = {"x": (1, 8, 8), "y": (1,)}


def test_a_build_on_a_worker_thread_never_switches_the_collector(tmp_path, monkeypatch):
    path = write_cycled_csv(tmp_path, "train.csv", rows=50, files=3)
    switched = []
    monkeypatch.setattr(gc, "disable", lambda: switched.append("disable"))
    monkeypatch.setattr(gc, "enable", lambda: switched.append("enable"))
    failures = []

    def build():
        try:
            build_index(path, SHAPES, label_classes={"y": 3}, chunk_rows=7)
        except Exception as exc:  # pragma: no cover - reported below
            failures.append(exc)
    worker = threading.Thread(target=build)
    worker.start()
    worker.join()
    assert not failures and switched == []


def test_a_build_on_the_main_thread_pauses_it_and_restores_it(tmp_path):
    path = write_cycled_csv(tmp_path, "train.csv", rows=50, files=3)
    was = gc.isenabled()
    gc.enable()
    try:
        build_index(path, SHAPES, label_classes={"y": 3}, chunk_rows=7)
        assert gc.isenabled()
        gc.disable()
        build_index(path, SHAPES, label_classes={"y": 3}, chunk_rows=7)
        assert not gc.isenabled()  # a caller's own choice is kept
    finally:
        (gc.enable if was else gc.disable)()
