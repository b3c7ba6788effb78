"""Images decoded on the fly by the decode worker processes (engine/data/decode_pool.py, on_the_fly.py, issue 31):
the cache's pixels, decoded outside this process and ahead of the batch, the located error for a bad file, a dead
worker's part decoded here, and workers sized by the host's ranks."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from nnconsole.engine.data import decode_pool, on_the_fly
from nnconsole.engine.data.csv_reader import DatasetError
from nnconsole.engine.data.loading import load_dataset
from tests.support.datasets import write_png
from tests.support.image_projects import write_cycled_csv
from tests.support.paths import ROOT
from tests.support.processes import alive, wait_until_exited

SHAPES = {"x": [1, 8, 8], "y": [1]}


def _tight(tmp_path, rows=60, files=24):
    csv_path = write_cycled_csv(tmp_path, "train.csv", rows=rows, files=files)
    tight = load_dataset(csv_path, SHAPES, cache_dir=tmp_path / "c", cache_budget=1e-9)  # forces on the fly
    assert isinstance(tight.images["x"], on_the_fly.OnDemandImages)
    return csv_path, tight


def _no_decoding_here(monkeypatch):
    def refuse(*_args, **_kwargs):
        raise AssertionError("decoded in the training process")
    monkeypatch.setattr(on_the_fly, "decode_images", refuse)
    monkeypatch.setattr(decode_pool, "decode_images", refuse)


def test_batches_are_decoded_in_the_decode_processes_with_the_caches_pixels(tmp_path, monkeypatch):
    csv_path, tight = _tight(tmp_path)
    cached = load_dataset(csv_path, SHAPES, cache=False)
    _no_decoding_here(monkeypatch)  # every pixel below comes from the decode processes
    batches = [np.array([5, 0, 11, 5, 59, 17]), np.arange(60)[::-1], np.array([3]), np.arange(0, 60, 7)]
    for batch in batches[1:]:  # announced ahead, as the trainer's prefetcher does
        tight.start(["x"], batch)
    for batch in batches:
        np.testing.assert_array_equal(tight.gather("x", batch), cached.gather("x", batch))
    pool = decode_pool.shared_pool()
    assert pool.pids and all(os.path.exists(f"/proc/{pid}") for pid in pool.pids)
    assert not tight.images["x"]._started  # every announced batch was taken


def test_a_batch_announced_ahead_is_decoded_before_it_is_taken(tmp_path, monkeypatch):
    _, tight = _tight(tmp_path)
    batch = np.arange(24)
    tight.start(["x"], batch)
    (_, _, job), = tight.images["x"]._started.values()
    assert job.done.wait(30)  # decoded while this thread did nothing
    _no_decoding_here(monkeypatch)
    assert tight.gather("x", batch).shape == (24, 1, 8, 8)


def test_the_first_bad_file_of_a_batch_split_over_processes_is_reported_at_its_first_line(tmp_path):
    csv_path, tight = _tight(tmp_path)
    (tmp_path / "img" / "19.png").write_bytes(b"damaged after the start")  # first named on line 21
    (tmp_path / "img" / "7.png").write_bytes(b"damaged too")  # line 9: the lower file, the one reported
    with pytest.raises(DatasetError) as info:
        tight.gather("x", np.arange(60))
    assert info.value.line == 9 and "cannot decode image file 'img/7.png'" in str(info.value)
    write_png(tmp_path / "img" / "7.png", np.zeros((9, 8), dtype=np.uint8))  # a wrong size: named as such
    with pytest.raises(DatasetError) as info:
        tight.gather("x", [7, 8])
    assert info.value.line == 9 and "is 9x8 (HxW)" in str(info.value)


def test_a_dead_decode_process_leaves_its_part_to_the_caller(tmp_path):
    csv_path, tight = _tight(tmp_path)
    cached = load_dataset(csv_path, SHAPES, cache=False)
    pool = decode_pool.DecodePool(2)
    try:
        os.kill(pool.pids[0], signal.SIGKILL)
        os.waitpid(pool.pids[0], 0)
        source = tight.images["x"]
        job = pool.submit([source.paths[i] for i in range(24)], source.layout)
        pixels, failure = pool.result(job)
        assert failure is None
        np.testing.assert_array_equal(pixels, cached.images["x"][:24])
        pool.release(job)
    finally:
        pool.close()
    assert all(not os.path.exists(f"/proc/{pid}") for pid in pool.pids)


def test_each_rank_on_a_host_gets_its_share_of_the_cores(monkeypatch):
    monkeypatch.setattr(decode_pool.os, "cpu_count", lambda: 16)
    for name in decode_pool.LOCAL_SIZE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert decode_pool.decode_workers() == 16
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2")  # 2 Open MPI ranks on this host
    assert decode_pool.decode_workers() == 8
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "32")
    assert decode_pool.decode_workers() == 1


def test_the_memory_regions_of_finished_batches_are_reused(tmp_path):
    _, tight = _tight(tmp_path)
    pool = decode_pool.shared_pool()
    for _ in range(20):
        tight.gather("x", np.arange(60))
    sizes = pool._size
    for _ in range(20):
        tight.gather("x", np.arange(60))
    assert pool._size == sizes and not pool._regions and not pool._tasks


SCRIPT = """
import sys, numpy as np
from nnconsole.engine.data.loading import load_dataset
from nnconsole.engine.data import decode_pool
ds = load_dataset(sys.argv[1], {"x": [1, 8, 8], "y": [1]}, cache_dir=sys.argv[2], cache_budget=1e-9)
ds.gather("x", np.arange(ds.size))
print(" ".join(map(str, decode_pool.shared_pool().pids)), flush=True)
while True:
    ds.start(["x"], np.arange(ds.size)[::-1])
    ds.gather("x", np.arange(ds.size)[::-1])
"""


def _memory_files(pid: int) -> list:
    try:
        return [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")
                if "nnconsole-decode" in os.readlink(f"/proc/{pid}/fd/{fd}")]
    except OSError:
        return []


def test_a_killed_process_leaves_no_decode_process_and_no_shared_memory(tmp_path):
    csv_path = write_cycled_csv(tmp_path, "train.csv", rows=200, files=50)
    shm_before = set(os.listdir("/dev/shm"))
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(csv_path), str(tmp_path / "c")],
                            stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=ROOT))
    try:
        pids = [int(p) for p in proc.stdout.readline().split()]
        assert pids and all(alive(p) for p in pids)
        assert all(_memory_files(p) for p in pids) and _memory_files(proc.pid)  # the memory they share
        time.sleep(0.3)  # decoding batch after batch
    finally:
        proc.kill()
        proc.wait()
    wait_until_exited(pids, 10, f"decode processes outlived their killed parent: {pids}")
    left = [n for n in set(os.listdir("/dev/shm")) - shm_before if not re.match(r"nnconsole-\d+-", n)]
    assert not left  # the memory had no name there, and none was made (other runs' launcher folders aside)


def test_a_decode_process_leaves_ctrl_c_to_its_parent(tmp_path):
    _, tight = _tight(tmp_path)
    source = tight.images["x"]
    pool = decode_pool.DecodePool(1)
    try:
        first = pool.submit([source.paths[0]], source.layout)  # the worker is up and reading tasks
        pool.result(first)
        pool.release(first)
        os.kill(pool.pids[0], signal.SIGINT)  # what Ctrl-C in a terminal sends the whole process group
        time.sleep(0.5)
        job = pool.submit([source.paths[i] for i in range(24)], source.layout)
        assert pool.result(job)[1] is None and not job.orphans  # decoded by the worker, still there
        pool.release(job)
    finally:
        pool.close()
