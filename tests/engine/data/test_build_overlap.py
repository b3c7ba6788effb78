"""Issue 31: the cache build overlaps the first epoch. Training starts once the chunks its first batches need are
written (files decoded in the first epoch's order), trains exactly as a warm start would, and a stop or a bad image
during the build behaves as before (resumable; an error naming the CSV line)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from nnconsole.engine.data import cache_build
from nnconsole.engine.data.build_overlap import BuildingImages, first_use_order
from nnconsole.engine.data.csv_reader import DatasetError
from nnconsole.engine.data.loading import epoch_order, load_dataset, worker_batches
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.test_seams import SEAMS_VARIABLE
from tests.support.datasets import cache_entries
from tests.support.image_projects import cycled_image_project, write_cycled_csv
from tests.support.training import final_params, results_of, train_file_in_process
from tests.support.runs import build_end_and_first_train

SHAPES = {"x": (1, 8, 8), "y": (1,)}


def _first_epoch(seed: int = 5):
    return lambda size: epoch_order(size, seed, 0, True)


def test_files_are_decoded_in_the_order_the_first_epoch_first_needs_them():
    row_files = np.array([3, 1, 3, 0, 1, 2], dtype=np.uint32)
    order = np.array([5, 2, 4, 0, 1, 3])  # rows: files 2, 3, 1, 3, 1, 0
    assert first_use_order(row_files, order, 5).tolist() == [2, 3, 1, 0, 4]  # file 4: no row, last


def test_a_cold_run_trains_from_the_first_chunks_and_ends_with_a_warm_runs_parameters(tmp_path, monkeypatch):
    """2 epochs, shuffled, 60 distinct files in chunks of 4 decoded slowly: the first iteration is recorded
    before the build's last progress record, and the parameters equal, bit for bit, those of a second run that
    opens the finished entry."""
    monkeypatch.setattr(cache_build, "CHUNK", 4)
    monkeypatch.setenv(SEAMS_VARIABLE, json.dumps({"decode_delay_ms": 40}))  # the build: about 2.4 s
    project = cycled_image_project(str(tmp_path / "p"), rows=120, files=60, epochs=2, batch=8)
    cold = train_file_in_process(project)
    first_train, built, kinds = build_end_and_first_train(cold)
    assert first_train < built, kinds
    monkeypatch.delenv(SEAMS_VARIABLE)
    shutil.move(results_of(project), str(tmp_path / "cold_results"))
    warm = train_file_in_process(project)
    assert not [r for r in runs.iter_metrics(warm, None) if r.get("type") == "dataset_cache"
                and r.get("dataset") == "training" and r["done"] < r["total"]], "the warm run built again"
    cold_params, warm_params = final_params(str(tmp_path / "cold_results" / Path(cold).name)), final_params(warm)
    assert sorted(cold_params) == sorted(warm_params)
    for name in cold_params:
        np.testing.assert_array_equal(cold_params[name], warm_params[name], err_msg=name)


def test_batches_gathered_during_the_build_hold_the_finished_caches_pixels(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_build, "CHUNK", 3)
    csv_path = write_cycled_csv(tmp_path, "train.csv", rows=50, files=20)
    reference = load_dataset(csv_path, SHAPES, cache=False)
    monkeypatch.setenv(SEAMS_VARIABLE, json.dumps({"decode_delay_ms": 20}))
    ds = load_dataset(csv_path, SHAPES, cache_dir=tmp_path / "c", first_order=_first_epoch())
    assert isinstance(ds.images["x"], BuildingImages)
    assert not ds.images["x"].state.ended, "load_dataset waited for the whole build (0.4 s)"
    for batch in worker_batches(epoch_order(ds.size, 5, 0), 8, 0, 1):
        np.testing.assert_array_equal(ds.gather("x", batch), reference.gather("x", batch))
    monkeypatch.delenv(SEAMS_VARIABLE)
    warm = load_dataset(csv_path, SHAPES, cache_dir=tmp_path / "c")  # the finished entry, opened and checked
    assert isinstance(warm.images["x"], np.ndarray)
    np.testing.assert_array_equal(warm.gather("x", np.arange(50)), reference.gather("x", np.arange(50)))


def test_a_stop_during_the_build_leaves_it_resumable_and_batches_still_get_their_pixels(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_build, "CHUNK", 2)
    csv_path = write_cycled_csv(tmp_path, "train.csv", rows=40, files=16)
    reference = load_dataset(csv_path, SHAPES, cache=False)
    monkeypatch.setenv(SEAMS_VARIABLE, json.dumps({"decode_delay_ms": 30}))
    asked = []

    def stop() -> bool:  # asked before each chunk: a stop once two chunks (4 files) are written
        asked.append(1)
        return len(asked) > 3
    ds = load_dataset(csv_path, SHAPES, cache_dir=tmp_path / "c", first_order=_first_epoch(), stop=stop)
    all_rows = np.arange(40)
    np.testing.assert_array_equal(ds.gather("x", all_rows), reference.gather("x", all_rows))  # after the stop
    assert ds.images["x"].state.stopped
    assert not cache_entries(tmp_path / "c"), "a stopped build was put in place"
    assert list((tmp_path / "c").glob(".*.partial/progress.json")), "the build folder was not kept for resuming"
    monkeypatch.delenv(SEAMS_VARIABLE)
    resumed = []
    again = load_dataset(csv_path, SHAPES, cache_dir=tmp_path / "c", first_order=_first_epoch(),
                         progress=lambda done, total, eta: resumed.append(done))
    np.testing.assert_array_equal(again.gather("x", all_rows), reference.gather("x", all_rows))
    assert resumed[0] >= 4, "the build started over"
    ended = again.images["x"].state
    assert ended.wait_end(60) and ended.error is None and not ended.stopped
    assert len(cache_entries(tmp_path / "c")) == 1 and not list((tmp_path / "c").glob(".*.partial"))


def test_a_bad_image_found_during_the_build_is_reported_naming_its_csv_line(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_build, "CHUNK", 2)
    csv_path = write_cycled_csv(tmp_path, "train.csv", rows=30, files=12)
    (tmp_path / "img" / "9.png").write_bytes(b"not a png")  # first named on line 11 (row 9)
    ds = load_dataset(csv_path, SHAPES, cache_dir=tmp_path / "c", first_order=_first_epoch())
    with pytest.raises(DatasetError) as caught:
        ds.gather("x", np.arange(30))
    assert "train.csv" in str(caught.value) and "11" in str(caught.value) and "img/9.png" in str(caught.value)
    assert not list((tmp_path / "c").glob(".*.partial")), "the failed build's folder was left"
