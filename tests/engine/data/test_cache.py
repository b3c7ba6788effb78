"""The shared uint8 dataset cache (issue 18): memory-mapped entries, per-batch normalising bit-identical to the
float32 path, damaged entries rebuilt, two processes building at once, a parallel build, a killed build resumed."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from nnconsole.engine.data import cache_build as dataset_build, decode as dataset_decode
from nnconsole.engine.data.loading import Dataset, DatasetError, load_dataset
from tests.support.datasets import cache_entries, grey, image_csv, no_decoding, write_png
from nnconsole.engine.check.project_file import load_valid_project
from tests.support.paths import ROOT, TEMPLATES

DIGITS = Path(TEMPLATES) / "digits_cnn"


def old_float_path(csv_path: Path, channels: int) -> np.ndarray:
    """What load_dataset returned before issue 18: every image decoded to float32, then ``out /= 255.0``."""
    from PIL import Image

    rows = csv_path.read_text().splitlines()[1:]
    out = None
    for i, row in enumerate(rows):
        with Image.open(csv_path.parent / row.split(",")[0]) as img:
            pixels = np.asarray(img.convert("RGB" if channels == 3 else "L"), dtype=np.uint8)
        chw = pixels.transpose(2, 0, 1) if pixels.ndim == 3 else pixels[None]
        if out is None:
            out = np.empty((len(rows),) + chw.shape, dtype=np.float32)
        out[i] = chw
    out /= 255.0
    return out


@pytest.mark.slow
def test_batches_are_bit_identical_to_the_float32_path(tmp_path):
    csv_path = DIGITS / "data" / "train.csv"
    ds = load_dataset(csv_path, {"x": (1, 8, 8), "y": (1,)}, cache_dir=tmp_path)
    old = old_float_path(csv_path, 1)
    assert ds.images["x"].dtype == np.uint8 and isinstance(ds.images["x"], np.memmap)
    assert not ds.images["x"].flags.writeable  # mapped read-only: every worker shares the page cache's copy
    rng = np.random.default_rng(0)
    for _ in range(20):
        idx = rng.integers(0, ds.size, 64)
        batch = ds.gather("x", idx)
        assert batch.dtype == np.float32
        assert batch.view(np.uint32).tobytes() == old[idx].view(np.uint32).tobytes()
    assert ds.arrays["x"].view(np.uint32).tobytes() == old.view(np.uint32).tobytes()
    out = np.zeros((3, 1, 8, 8), np.float32)
    assert ds.gather("x", [5, 0, 5], out=out) is out  # written into the caller's (nnabla's) array


@pytest.mark.slow
def test_training_gives_the_same_parameters_as_the_float32_path(tmp_path, monkeypatch):
    """One epoch of the digits template through the trainer: uint8 cache + per-batch normalising vs float32."""
    import shutil

    import nnabla as nn

    from nnconsole.engine.train import trainer as train
    from tests.support.training import final_params, train_in_process

    project_dir = tmp_path / "digits"
    shutil.copytree(DIGITS, project_dir)
    project = load_valid_project(str(project_dir / "project.yaml"))
    project.config.max_epoch = 1
    run_new, losses_new = train_in_process(project, str(tmp_path / "new"))
    real = train.load_datasets

    def float32_datasets(p, progress=None, **options):  # the old path: whole float32 arrays, gathered with np.take
        sets = real(p, progress, **options)
        return tuple(Dataset(d.path, d.variables, d.size, {**d.numbers, **{k: d.arrays[k] for k in d.images}},
                             {}, d.normalize, d.kinds) for d in sets)

    monkeypatch.setattr(train, "load_datasets", float32_datasets)
    project = load_valid_project(str(project_dir / "project.yaml"))
    project.config.max_epoch = 1
    run_old, losses_old = train_in_process(project, str(tmp_path / "old"))
    nn.clear_parameters()
    assert losses_new == losses_old
    new, old = final_params(run_new), final_params(run_old)
    assert new.keys() == old.keys()
    for k in new:
        assert new[k].tobytes() == old[k].tobytes(), k


def only_entry(folder: Path) -> Path:
    (entry,) = cache_entries(folder)
    return entry


@pytest.mark.parametrize("damage", ["truncated", "wrong header", "key mismatch", "meta missing", "longer",
                                    "file outside"])
def test_damaged_entry_is_detected_and_rebuilt(tmp_path, monkeypatch, caplog, damage):
    csv_path = image_csv(tmp_path, n=5)
    cache_dir = tmp_path / "cache"
    first = load_dataset(csv_path, cache_dir=cache_dir)
    expected = np.array(first.arrays["x"])
    entry = only_entry(cache_dir)
    data, meta = entry / "v0.npy", entry / "meta.json"
    if damage == "truncated":
        data.write_bytes(data.read_bytes()[:-7])
    elif damage == "wrong header":
        raw = data.read_bytes()
        data.write_bytes(raw.replace(b"'|u1'", b"'<f4'", 1))
    elif damage == "key mismatch":
        m = json.loads(meta.read_text())
        m["key"] = "0" * 64
        meta.write_text(json.dumps(m))
    elif damage == "meta missing":
        meta.unlink()
    elif damage == "file outside":  # a meta naming another .npy (same shape) is not followed
        other = tmp_path / "other.npy"
        np.save(other, np.zeros((5, 1, 8, 8), np.uint8))
        m = json.loads(meta.read_text())
        m["variables"]["x"]["file"] = str(other)
        meta.write_text(json.dumps(m))
    else:
        data.write_bytes(data.read_bytes() + b"\0" * 64)
    decoded = []
    real = dataset_decode._decode_image
    monkeypatch.setattr(dataset_decode, "_decode_image", lambda *a: decoded.append(a) or real(*a))
    again = load_dataset(csv_path, cache_dir=cache_dir)
    assert len(decoded) >= 5, "the damaged entry was used instead of rebuilt"
    np.testing.assert_array_equal(again.arrays["x"], expected)
    assert "damaged or stale" in caplog.text
    no_decoding(monkeypatch)  # and the rebuilt entry is good
    np.testing.assert_array_equal(load_dataset(csv_path, cache_dir=cache_dir).arrays["x"], expected)


def test_bad_image_is_a_located_error_and_leaves_no_entry(tmp_path):
    csv_path = image_csv(tmp_path, n=4)
    (csv_path.parent / "img" / "2.png").write_bytes(b"not a png")
    with pytest.raises(DatasetError, match=r"line 4, column x: cannot decode image file 'img/2.png'"):
        load_dataset(csv_path, cache_dir=tmp_path / "cache")
    assert cache_entries(tmp_path / "cache") == []
    assert not [p for p in (tmp_path / "cache").iterdir() if p.name.endswith(".partial")]


def many_images(tmp_path: Path, n: int, size: int = 8) -> Path:
    folder = tmp_path / "many"
    (folder / "img").mkdir(parents=True)
    rows = ["x:image,y:label"]
    for i in range(n):
        write_png(folder / "img" / f"{i}.png", grey(i, size, size))
        rows.append(f"img/{i}.png,{i % 3}")
    (folder / "train.csv").write_text("\n".join(rows) + "\n")
    return folder / "train.csv"


@pytest.mark.slow
def test_parallel_build_equals_in_process_build_and_reports_progress(tmp_path, monkeypatch):
    csv_path = many_images(tmp_path, 300)
    monkeypatch.setattr(dataset_build, "POOL_MIN_IMAGES", 1)
    monkeypatch.setattr(dataset_build, "CHUNK", 4)  # 75 small tasks: answers arrive several per read
    seen = []
    pooled = load_dataset(csv_path, cache_dir=tmp_path / "a", build_workers=2,
                          progress=lambda done, total, eta: seen.append((done, total, eta)))
    inline = load_dataset(csv_path, cache_dir=tmp_path / "b", build_workers=1)
    np.testing.assert_array_equal(np.asarray(pooled.images["x"]), np.asarray(inline.images["x"]))
    np.testing.assert_array_equal(pooled.images["x"][7, 0], grey(7))
    assert seen[0][:2] == (0, 300) and seen[-1][:2] == (300, 300)
    assert [d for d, _, _ in seen] == sorted(d for d, _, _ in seen)
    assert any(eta is not None and eta >= 0 for _, _, eta in seen)


SCRIPT = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, {root!r})
    from nnconsole.engine.data import cache_build as dataset_build, decode as dataset_decode
    from nnconsole.engine.data.loading import load_dataset
    dataset_build.CHUNK = 4
    real = dataset_decode._decode_image
    def slow(path, mode):
        with open({log!r}, "a") as fh:
            fh.write(f"{{os.getpid()}} {{path}}\\n")
        time.sleep({delay})
        return real(path, mode)
    dataset_decode._decode_image = slow
    ds = load_dataset({csv!r}, cache_dir={cache!r}, build_workers=1)
    print("sum", int(ds.images["x"].astype("int64").sum()), flush=True)
""")


def start_loader(tmp_path: Path, csv_path: Path, log: Path, delay: float) -> subprocess.Popen:
    code = SCRIPT.format(root=ROOT, log=str(log), csv=str(csv_path), cache=str(tmp_path / "cache"), delay=delay)
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=str(tmp_path))


@pytest.mark.slow
def test_two_processes_loading_at_once_build_the_entry_once(tmp_path):
    csv_path = many_images(tmp_path, 24)
    log = tmp_path / "decoded.log"
    procs = [start_loader(tmp_path, csv_path, log, 0.02) for _ in range(2)]
    outputs = [p.communicate(timeout=120) for p in procs]
    for p, (out, err) in zip(procs, outputs):
        assert p.returncode == 0, err
    sums = {out.split()[-1] for out, _ in outputs}
    expected = sum(int(grey(i).astype(np.int64).sum()) for i in range(24))
    assert sums == {str(expected)}
    builders = {line.split()[0] for line in log.read_text().splitlines()}
    assert len(builders) == 1, "both processes decoded: the build was not shared"
    assert len(cache_entries(tmp_path / "cache")) == 1


@pytest.mark.slow
def test_a_killed_build_resumes_and_finishes_correctly(tmp_path):
    csv_path = many_images(tmp_path, 40)
    log = tmp_path / "decoded.log"
    proc = start_loader(tmp_path, csv_path, log, 0.05)
    deadline = time.monotonic() + 60
    progress = []
    while time.monotonic() < deadline and proc.poll() is None:
        partial = list((tmp_path / "cache").glob(".*.partial/progress.json"))
        if partial:
            try:
                progress = json.loads(partial[0].read_text()).get("done", [])
            except ValueError:
                progress = []
            if len(progress) >= 2:
                break
        time.sleep(0.02)
    assert proc.poll() is None, "the build finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    first_run = len(log.read_text().splitlines())
    assert first_run < 40
    log.unlink()
    second = start_loader(tmp_path, csv_path, log, 0.0)
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    expected = sum(int(grey(i).astype(np.int64).sum()) for i in range(40))
    assert out.split()[-1] == str(expected)
    resumed = len(log.read_text().splitlines())  # (+1: the first image is read again for its size)
    assert resumed <= 40 - 4 * 2 + 1, f"decoded {resumed} of 40 again: the finished chunks were not reused"
    assert len(cache_entries(tmp_path / "cache")) == 1
    assert not list((tmp_path / "cache").glob(".*.partial"))


def test_decode_processes_that_die_leave_their_chunks_to_the_build(tmp_path, monkeypatch, caplog):
    csv_path = many_images(tmp_path, 100)
    monkeypatch.setattr(dataset_build, "POOL_MIN_IMAGES", 1)
    monkeypatch.setattr(dataset_build, "CHUNK", 16)
    from nnconsole.engine.data import build_pool  # the pool's processes: started there

    monkeypatch.setattr(build_pool, "python_module_command", lambda module: [sys.executable, "-c", "pass"])
    ds = load_dataset(csv_path, cache_dir=tmp_path / "cache", build_workers=2)
    assert "ended early" in caplog.text
    for i in (0, 57, 99):
        np.testing.assert_array_equal(ds.images["x"][i, 0], grey(i))


def test_colour_batches_read_with_announced_pages_equal_the_whole_arrays(tmp_path, monkeypatch):
    from nnconsole.engine.data import loading as data

    folder = tmp_path / "rgb"
    rows = ["x:image,y:label"]
    for i in range(40):
        write_png(folder / f"{i}.png", np.stack([grey(i, 32, 32), grey(i + 1, 32, 32), grey(i + 2, 32, 32)], -1))
        rows.append(f"{i}.png,{i % 3}")
    (folder / "d.csv").write_text("\n".join(rows) + "\n")
    ds = load_dataset(folder / "d.csv", {"x": (3, 32, 32), "y": (1,)}, cache_dir=tmp_path / "cache")
    announced = []
    real = data._will_need
    monkeypatch.setattr(data, "_will_need", lambda s, i: announced.append(len(i)) or real(s, i))
    whole = np.asarray(ds.images["x"]).astype(np.float32) / np.float32(255)
    idx = np.array([39, 0, 17, 17, 5])
    assert ds.gather("x", idx).tobytes() == whole[idx].tobytes()
    assert announced == [5] and ds.images["x"].strides[0] >= data.WILL_NEED_MIN_ROW


@pytest.mark.slow
def test_a_process_waiting_for_another_ones_build_relays_its_progress_to_the_end(tmp_path, monkeypatch):
    csv_path = many_images(tmp_path, 24)
    builder = start_loader(tmp_path, csv_path, tmp_path / "decoded.log", 0.05)
    deadline = time.monotonic() + 60
    while not list((tmp_path / "cache").glob(".*.partial/progress.json")) and time.monotonic() < deadline:
        time.sleep(0.02)
    no_decoding(monkeypatch)  # this process only waits and reads
    seen = []
    ds = load_dataset(csv_path, cache_dir=tmp_path / "cache", progress=lambda done, total, eta: seen.append((done, total)))
    out, err = builder.communicate(timeout=120)
    assert builder.returncode == 0, err
    assert seen and seen[-1] == (24, 24) and all(total == 24 for _, total in seen)
    np.testing.assert_array_equal(ds.images["x"][5, 0], grey(5))


def test_a_build_removes_the_float32_npz_the_previous_cache_format_left(tmp_path):
    from nnconsole.engine.data.cache import _cache_prefix

    csv_path = image_csv(tmp_path, n=3)
    folder = csv_path.parent / ".nnconsole-cache"
    folder.mkdir()
    old = folder / (_cache_prefix(csv_path) + "0123456789abcdef0123456789abcdef.npz")
    other = folder / "another-csv-12345678-0123456789abcdef0123456789abcdef.npz"
    for path in (old, other):
        np.savez(path, v0=np.zeros((3, 1, 8, 8), np.float32))
    load_dataset(csv_path)
    assert not old.exists() and other.exists()  # only this CSV's
