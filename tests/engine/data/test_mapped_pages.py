"""A memory-mapped cache's pages stay mapped between batches and are dropped by window (engine/data/mapped_pages.py,
issue 31): a batch no longer re-faults its pages after every gather, and a worker's resident memory stays within
the window. Measured on the real mapping (its Rss in /proc/self/smaps)."""
from __future__ import annotations

import os

import numpy as np
import pytest

from nnconsole.engine.data import mapped_pages
from nnconsole.engine.data.loading import Dataset

ROW = 4096  # bytes per sample: one page each
ROWS = 2048  # an 8 MB cache
MB = 1024 * 1024

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="Linux /proc needed")


def _cache(tmp_path) -> tuple:
    path = tmp_path / "x.npy"
    data = np.random.default_rng(0).integers(0, 256, (ROWS, 1, 64, 64), dtype=np.uint8)
    np.save(path, data)
    path.read_bytes()  # in the page cache, as a warm cache is
    return str(path), data, np.load(path, mmap_mode="r")


def _mapped_kb(path: str) -> int:
    """Resident kB of this process's mappings of ``path``."""
    total, inside = 0, False
    with open("/proc/self/smaps") as fh:
        for line in fh:
            head = line.split()
            if head and "-" in head[0] and len(head) >= 5 and ":" in head[3]:  # a mapping's first line
                inside = line.rstrip().endswith(path)
            elif inside and line.startswith("Rss:"):
                total += int(head[1])
    return total


def _dataset(images: np.ndarray) -> Dataset:
    return Dataset(path="x.csv", variables=["x"], size=ROWS, numbers={}, images={"x": images},
                   kinds={"x": "image"})


def test_gathered_pages_stay_mapped_within_the_window(tmp_path, monkeypatch):
    monkeypatch.setattr(mapped_pages, "UNMAP_WINDOW_BYTES", 64 * MB)
    path, data, images = _cache(tmp_path)
    ds = _dataset(images)
    rng = np.random.default_rng(1)
    for _ in range(50):
        indices = rng.choice(ROWS, 32, replace=False)
        batch = ds.gather("x", indices)
        np.testing.assert_array_equal(batch, data[indices].astype(np.float32) / np.float32(255.0))
        # still mapped: the next batch does not fault them in again (before issue 31: dropped after every batch)
        assert _mapped_kb(path) >= 32 * ROW // 1024
    assert ds._pages.drops == 0


def test_pages_are_dropped_once_resident_memory_grew_by_the_window(tmp_path, monkeypatch):
    monkeypatch.setattr(mapped_pages, "UNMAP_WINDOW_BYTES", 2 * MB)
    path, data, images = _cache(tmp_path)
    ds = _dataset(images)
    for start in range(0, ROWS, 64):  # the whole 8 MB cache, in order
        indices = np.arange(start, start + 64)
        np.testing.assert_array_equal(ds.gather("x", indices), data[indices].astype(np.float32) / np.float32(255.0))
    assert ds._pages.drops >= 1
    assert _mapped_kb(path) * 1024 < ROWS * ROW  # not the whole cache


def test_without_statm_pages_are_dropped_every_window_of_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(mapped_pages, "UNMAP_WINDOW_BYTES", 64 * ROW)
    monkeypatch.setattr(mapped_pages, "_STATM", str(tmp_path / "no-statm"))
    path, data, images = _cache(tmp_path)
    ds = _dataset(images)
    for start in range(0, 32 * 10, 32):  # 10 batches of 32 rows: a drop every 2 batches
        ds.gather("x", np.arange(start, start + 32))
    assert ds._pages.drops == 5
