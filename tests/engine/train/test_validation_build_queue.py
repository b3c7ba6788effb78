"""Issue 31: the validation set's cache build is queued behind the training set's, both behind the first epoch,
instead of being made before the first iteration; the first validation (end of epoch 1) waits for its files.
Results are unchanged, and a bad validation image is still reported with its CSV line."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from nnconsole.engine.data import cache_build
from nnconsole.engine.data.csv_reader import DatasetError
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.test_seams import SEAMS_VARIABLE
from tests.support.image_projects import cycled_image_project, cycled_rows
from tests.support.training import final_params, results_of, train_file_in_process


def _cache_ends(records: list, split: str) -> int:
    return next(i for i, r in enumerate(records) if r.get("type") == "dataset_cache"
                and r.get("dataset") == split and r["done"] == r["total"])


def test_the_first_iteration_comes_before_the_validation_build_ends_and_results_are_a_warm_runs(tmp_path,
                                                                                                monkeypatch):
    monkeypatch.setattr(cache_build, "CHUNK", 4)
    monkeypatch.setenv(SEAMS_VARIABLE, json.dumps({"decode_delay_ms": 30}))  # builds of 60 + 40 files: ~3 s
    project = cycled_image_project(str(tmp_path / "p"), rows=120, files=60, epochs=2, batch=8)
    cold = train_file_in_process(project)
    records = list(runs.iter_metrics(cold, None))
    kinds = [(r.get("type"), r.get("dataset"), r.get("done"), r.get("total")) for r in records]
    first_train = next(i for i, r in enumerate(records) if r.get("type") == "train")
    training_built, validation_built = _cache_ends(records, "training"), _cache_ends(records, "validation")
    assert first_train < validation_built, kinds
    assert training_built < validation_built, f"the validation build did not wait for the training one: {kinds}"
    monkeypatch.delenv(SEAMS_VARIABLE)
    shutil.move(results_of(project), str(tmp_path / "cold_results"))
    warm = train_file_in_process(project)
    assert not [r for r in runs.iter_metrics(warm, None) if r.get("type") == "dataset_cache"
                and r["done"] < r["total"]], "the warm run built again"
    cold_run = str(tmp_path / "cold_results" / Path(cold).name)
    cold_params, warm_params = final_params(cold_run), final_params(warm)
    assert sorted(cold_params) == sorted(warm_params)
    for name in cold_params:
        np.testing.assert_array_equal(cold_params[name], warm_params[name], err_msg=name)
    cold_valid = [(r["epoch"], r["loss"], r.get("error")) for r in runs.iter_metrics(cold_run, "validation")]
    warm_valid = [(r["epoch"], r["loss"], r.get("error")) for r in runs.iter_metrics(warm, "validation")]
    assert cold_valid and cold_valid == warm_valid


def test_a_bad_validation_image_is_reported_with_its_csv_line(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_build, "CHUNK", 4)
    project = cycled_image_project(str(tmp_path / "p"), rows=60, files=20, epochs=1, batch=8)
    folder = Path(project).parent
    rows = cycled_rows(20, 20)
    rows[13] = ("img/broken.png", 1)  # line 15 of valid.csv (header = line 1); used by no training row
    (folder / "img" / "broken.png").write_bytes(b"not a png")
    (folder / "valid.csv").write_text("x:image,y:label\n" + "".join(f"{c},{y}\n" for c, y in rows), encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        train_file_in_process(project)
    message = str(caught.value)
    assert "valid.csv" in message and "15" in message and "img/broken.png" in message, message
