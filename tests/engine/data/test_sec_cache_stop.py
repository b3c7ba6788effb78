"""Issue 25, item 14: a stop request during a dataset cache build ends it within seconds, and the build resumes.

The stop is checked between chunks (in this process) and at least every STOP_POLL_S while decode processes
work (the pool); the progress is saved first, so the next load decodes only what was left."""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from nnconsole.engine.data import cache_build, decode
from nnconsole.engine.data.loading import DatasetBuildStopped, load_dataset
from nnconsole.engine.test_seams import SEAMS_VARIABLE
from tests.support.timing import budget


def grey(i: int) -> np.ndarray:
    return ((np.arange(64).reshape(8, 8) * 3 + i * 17) % 256).astype(np.uint8)


def many_images(tmp_path: Path, n: int) -> Path:
    folder = tmp_path / "many"
    (folder / "img").mkdir(parents=True)
    rows = ["x:image,y:label"]
    for i in range(n):
        Image.fromarray(grey(i)).save(folder / "img" / f"{i}.png")
        rows.append(f"img/{i}.png,{i % 3}")
    (folder / "train.csv").write_text("\n".join(rows) + "\n")
    return folder / "train.csv"


def expected(n: int) -> np.ndarray:
    return np.stack([grey(i) for i in range(n)])[:, None]


def test_a_stop_request_ends_an_in_process_build_within_a_chunk_and_the_build_resumes(tmp_path, monkeypatch):
    n = 200
    csv_path = many_images(tmp_path, n)
    monkeypatch.setattr(cache_build, "CHUNK", 8)
    real = decode._decode_image
    decoded = []
    monkeypatch.setattr(decode, "_decode_image", lambda *a: decoded.append(a) or time.sleep(0.01) or real(*a))
    asked = {}

    def stop() -> bool:
        if len(decoded) >= 40 and "at" not in asked:
            asked["at"] = time.monotonic()
        return "at" in asked

    with pytest.raises(DatasetBuildStopped):
        load_dataset(csv_path, cache_dir=tmp_path / "cache", build_workers=1, stop=stop)
    assert time.monotonic() - asked["at"] < budget(2.0), "the build went on after the stop request"
    first = len(decoded)
    assert first < n
    decoded.clear()
    data = load_dataset(csv_path, cache_dir=tmp_path / "cache", build_workers=1)
    np.testing.assert_array_equal(data.images["x"], expected(n))
    assert len(decoded) <= n - first + 8 + 1, "the stopped build was not resumed"


def test_a_stop_request_ends_a_pool_build_and_the_build_resumes(tmp_path, monkeypatch):
    n = 400
    csv_path = many_images(tmp_path, n)
    monkeypatch.setattr(cache_build, "CHUNK", 4)
    monkeypatch.setattr(cache_build, "POOL_MIN_IMAGES", 1)
    monkeypatch.setenv(SEAMS_VARIABLE, json.dumps({"decode_delay_ms": 10}))  # the decode processes: 2 s in all
    seen = []
    asked = {}

    def stop() -> bool:
        now = time.monotonic()
        asked.setdefault("first", now)
        if now - asked["first"] > 0.6 and seen and seen[-1] > 0:  # some chunks are done
            asked.setdefault("at", now)
        return "at" in asked

    with pytest.raises(DatasetBuildStopped):
        load_dataset(csv_path, cache_dir=tmp_path / "cache", build_workers=2, stop=stop,
                     progress=lambda done, total, eta: seen.append(done))
    assert time.monotonic() - asked["at"] < budget(3.0)
    stopped_at = seen[-1]
    assert 0 < stopped_at < n
    monkeypatch.delenv(SEAMS_VARIABLE)
    resumed = []
    data = load_dataset(csv_path, cache_dir=tmp_path / "cache", build_workers=2,
                        progress=lambda done, total, eta: resumed.append(done))
    np.testing.assert_array_equal(data.images["x"], expected(n))
    assert resumed[0] >= stopped_at, "the stopped build started over"


def test_a_stop_request_ends_the_wait_for_another_processes_build(tmp_path):
    """While another process holds the CSV's lock, a stop request ends the wait (it used to wait for the end)."""
    import fcntl
    import os

    from nnconsole.engine.data.cache import _cache_prefix

    csv_path = many_images(tmp_path, 4)
    cache = tmp_path / "cache"
    cache.mkdir()
    fd = os.open(cache / f"{_cache_prefix(csv_path)}lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)  # another builder
    try:
        started = time.monotonic()
        with pytest.raises(DatasetBuildStopped):
            load_dataset(csv_path, cache_dir=cache, stop=lambda: time.monotonic() - started > 0.3)
        assert time.monotonic() - started < budget(3.0)
    finally:
        os.close(fd)
