"""The host-level dataset index (issue 31): the CSV streamed once into columns of the cache entry, pixels once per
distinct file, a warm start that parses nothing and stats each distinct file once, no per-row Python objects,
located errors from the streamed checks, and training that ends with the parameters it ended with before."""
from __future__ import annotations

import json
import os
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from nnconsole.engine.data import dataset_entry, decode as dataset_decode, index as dataset_index
from nnconsole.engine.data.csv_reader import DatasetError
from nnconsole.engine.data.index import build_index
from nnconsole.engine.data.loading import check_dataset, epoch_order, load_dataset, worker_batches
from tests.support.datasets import cache_entries, no_decoding
from tests.support.image_projects import cycled_image_project, cycled_rows, write_cycled_csv
from tests.support.paths import ROOT
from tests.support.training import final_params, train_file_in_process

SHAPES = {"x": (1, 8, 8), "y": (1,)}
REFERENCE = Path(ROOT) / "tests" / "data" / "dataset_index" / "cycled_params.json"


def _decoded(folder: Path, cell: str) -> np.ndarray:
    return np.asarray(Image.open(folder / cell).convert("L"), dtype=np.float32)[None] / np.float32(255.0)


def test_training_on_rows_cycling_over_few_images_ends_with_the_parameters_it_did_before(tmp_path):
    """Same sample order, same pixels: the parameters equal, bit for bit, those the per-row cache gave (saved from
    a run of the code before issue 31 on this project: tests/data/dataset_index/cycled_params.json)."""
    run = train_file_in_process(cycled_image_project(str(tmp_path / "p")))
    params = final_params(run)
    reference = json.loads(REFERENCE.read_text())
    assert sorted(params) == sorted(reference)
    for name, saved in reference.items():
        want = np.array(saved["values"], dtype=np.float32).reshape(saved["shape"])
        np.testing.assert_array_equal(params[name], want, err_msg=name)


@pytest.mark.parametrize("cache", [True, False])
def test_batches_hold_each_rows_own_pixels_in_the_epochs_order(tmp_path, cache):
    csv_path = write_cycled_csv(tmp_path, "train.csv", rows=50, files=7)
    ds = load_dataset(csv_path, SHAPES, cache=cache, cache_dir=tmp_path / "c")
    cells = [cell for cell, _ in cycled_rows(50, 7)]
    for batch in worker_batches(epoch_order(ds.size, seed=3, epoch=1), 8, 1, 2):
        want = np.stack([_decoded(tmp_path, cells[i]) for i in batch])
        np.testing.assert_array_equal(ds.gather("x", batch), want)
        np.testing.assert_array_equal(ds.gather("y", batch)[:, 0], [label for _, label in
                                                                   (cycled_rows(50, 7)[i] for i in batch)])
    assert ds.cells("x") == cells


def test_the_entry_holds_each_distinct_image_once_decoded_once(tmp_path, monkeypatch):
    csv_path = write_cycled_csv(tmp_path, "train.csv", rows=300, files=5)
    decoded = []
    real = dataset_decode._decode_image
    monkeypatch.setattr(dataset_decode, "_decode_image", lambda *a: decoded.append(a[0]) or real(*a))
    ds = load_dataset(csv_path, SHAPES, cache_dir=tmp_path / "c", build_workers=1)
    assert len(decoded) == 5 and len(set(decoded)) == 5
    assert ds.images["x"].shape == (5, 1, 8, 8) and ds.size == 300
    (entry,) = cache_entries(tmp_path / "c")
    per_row = sum(np.load(entry / f, mmap_mode="r").nbytes for f in ("r0.npy", "x0.npy"))
    assert per_row / 300 <= 16  # the index: 4 bytes of row-to-file index + 4 of label a row
    assert (entry / "v0.npy").stat().st_size < 5 * 64 + 256


def test_a_warm_start_parses_nothing_and_stats_each_distinct_file_once(tmp_path, monkeypatch):
    csv_path = write_cycled_csv(tmp_path, "train.csv", rows=400, files=6)
    first = load_dataset(csv_path, SHAPES, cache_dir=tmp_path / "c")
    no_decoding(monkeypatch)
    monkeypatch.setattr(dataset_entry, "build_index", lambda *a, **k: pytest.fail("the CSV was parsed again"))
    stats = []
    real = dataset_index.resolve_image
    monkeypatch.setattr(dataset_index, "resolve_image", lambda f, c: stats.append(c) or real(f, c))
    again = load_dataset(csv_path, SHAPES, cache_dir=tmp_path / "c")
    assert sorted(stats) == sorted(f"img/{i}.png" for i in range(6))
    np.testing.assert_array_equal(again.gather("x", np.arange(400)), first.gather("x", np.arange(400)))


def test_an_image_changed_after_the_build_is_decoded_again(tmp_path):
    csv_path = write_cycled_csv(tmp_path, "train.csv", rows=30, files=3)
    load_dataset(csv_path, SHAPES, cache_dir=tmp_path / "c")
    Image.fromarray(np.full((8, 8), 7, np.uint8), "L").save(tmp_path / "img" / "1.png")
    st = os.stat(tmp_path / "img" / "1.png")
    os.utime(tmp_path / "img" / "1.png", ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))
    again = load_dataset(csv_path, SHAPES, cache_dir=tmp_path / "c")
    np.testing.assert_array_equal(again.gather("x", [1, 4]), np.full((2, 1, 8, 8), 7 / 255, np.float32))


def test_no_python_object_per_row_is_held_while_loading(tmp_path):
    """The peak of Python allocations while a 100,000-row CSV is indexed (cold) and opened (warm) is bounded by
    a chunk of rows (12 MB, 120 bytes a row here), not the ~700 bytes a row the list-of-rows loader held (70 MB
    here, issue 31): rows exist one chunk at a time."""
    rows = 100_000
    csv_path = write_cycled_csv(tmp_path, "train.csv", rows=rows, files=10)
    for label in ("cold", "warm"):
        tracemalloc.start()
        ds = load_dataset(csv_path, SHAPES, cache_dir=tmp_path / "c", build_workers=1)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert peak < 12e6, f"{label}: {peak / rows:.0f} bytes a row"
        assert not any(isinstance(v, list) and len(v) >= rows for v in vars(ds).values())


def _csv(tmp_path: Path, lines) -> Path:
    write_cycled_csv(tmp_path, "unused.csv", rows=1, files=3)
    path = tmp_path / "bad.csv"
    path.write_text("x:image,y:label\n" + "\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("bad, line, words", [
    ("img/9.png,1", 9, "image file 'img/9.png' not found"),
    ("img/1.png,7", 9, "class label '7'"),
    ("img/1.png,x", 9, "non-numeric value 'x'"),
    (",1", 9, "empty cell"),
    ("img/1.png", 9, "the row has 1 values"),
])
def test_errors_found_in_a_later_chunk_name_their_own_line(tmp_path, bad, line, words):
    rows = [f"img/{i % 3}.png,{i % 3}" for i in range(7)] + [bad] + ["img/0.png,0"] * 4
    path = _csv(tmp_path, rows)
    with pytest.raises(DatasetError) as info:
        build_index(path, SHAPES, label_classes={"y": 3}, chunk_rows=3)
    assert info.value.line == line and words in str(info.value)
    with pytest.raises(DatasetError) as whole:  # the default chunking says the same
        check_dataset(path, SHAPES, label_classes={"y": 3})
    assert str(whole.value) == str(info.value)


def test_an_undecodable_file_named_on_many_rows_is_reported_at_its_first_line(tmp_path):
    path = _csv(tmp_path, ["img/0.png,0", "img/2.png,1", "img/0.png,0", "img/2.png,1"])
    (tmp_path / "img" / "2.png").write_bytes(b"not a png")
    for cache in (True, False):
        with pytest.raises(DatasetError) as info:
            load_dataset(path, SHAPES, cache=cache, cache_dir=tmp_path / "c")
        assert info.value.line == 3 and "cannot decode image file 'img/2.png'" in str(info.value)


def test_images_over_the_disk_budget_are_decoded_per_batch_with_the_same_pixels(tmp_path):
    from nnconsole.engine.data.on_the_fly import OnDemandImages

    csv_path = write_cycled_csv(tmp_path, "train.csv", rows=40, files=6)
    cached = load_dataset(csv_path, SHAPES, cache=False)
    tight = load_dataset(csv_path, SHAPES, cache_dir=tmp_path / "c", cache_budget=1e-7)  # 100 bytes: 6 x 64 pass
    assert isinstance(tight.images["x"], OnDemandImages) and tight.shapes == cached.shapes
    (entry,) = cache_entries(tmp_path / "c")
    assert not (entry / "v0.npy").exists() and json.loads((entry / "meta.json").read_text())["index"]["on_the_fly"]
    batch = np.array([5, 0, 11, 5, 39, 17])
    np.testing.assert_array_equal(tight.gather("x", batch), cached.gather("x", batch))
    roomy = load_dataset(csv_path, SHAPES, cache_dir=tmp_path / "c", cache_budget=1.0)  # now it fits: pixels cached
    assert not isinstance(roomy.images["x"], OnDemandImages) and roomy.images["x"].shape == (6, 1, 8, 8)
    np.testing.assert_array_equal(roomy.gather("x", batch), cached.gather("x", batch))


def test_a_bad_image_decoded_on_the_fly_is_reported_at_its_first_line(tmp_path):
    path = _csv(tmp_path, ["img/0.png,0", "img/2.png,1", "img/2.png,1"])
    ds = load_dataset(path, SHAPES, cache_dir=tmp_path / "c", cache_budget=1e-9)
    (tmp_path / "img" / "2.png").write_bytes(b"damaged after the start")
    with pytest.raises(DatasetError) as info:
        ds.gather("x", [0, 2])
    assert info.value.line == 3 and "cannot decode image file 'img/2.png'" in str(info.value)


def test_a_negative_cache_budget_is_refused_with_the_setting_named(tmp_path):
    from nnconsole.engine.check.validate import check_settings
    from nnconsole.engine.check.project_file import load_valid_project

    project = load_valid_project(cycled_image_project(str(tmp_path / "p")))
    project.datasets.cache_budget = -1.0
    problems = [p for p in check_settings(project) if "cache_budget" in p.path]
    assert problems and problems[0].severity == "error"


def test_the_default_budget_is_the_cache_folders_free_space_so_a_small_disk_decodes_on_the_fly(tmp_path,
                                                                                                 monkeypatch):
    from nnconsole.engine.data.on_the_fly import OnDemandImages

    csv_path = write_cycled_csv(tmp_path, "train.csv", rows=20, files=4)

    class Full:
        f_bavail, f_frsize = 1, 200  # 200 bytes free: 4 x 64 bytes of pixels are over 80% of it
    monkeypatch.setattr(dataset_entry.os, "statvfs", lambda _folder: Full)
    ds = load_dataset(csv_path, SHAPES, cache_dir=tmp_path / "c")
    assert isinstance(ds.images["x"], OnDemandImages)
    np.testing.assert_array_equal(ds.gather("x", [3, 2]), load_dataset(csv_path, SHAPES, cache=False).gather("x", [3, 2]))
