"""Two workers under a real ``mpiexec -n 2`` share one dataset cache (issue 18): one rank builds it while the
other waits, rank 0 records the build's progress, and both train on the same memory-mapped entry."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from nnconsole.engine.rundir import store as runs
from nnconsole.engine.project.io import save_project
from nnconsole.engine.rundir.protocol import record_problems
from tests.support.cli import nnconsole, run_dir_from
from nnconsole.engine.check.project_file import load_valid_project
from tests.support.paths import TEMPLATES

pytestmark = pytest.mark.mpi

DIGITS = Path(TEMPLATES) / "digits_cnn"


def test_two_workers_build_the_cache_once_and_train_on_it(tmp_path):
    shutil.copytree(DIGITS, tmp_path / "digits")
    path = tmp_path / "digits" / "project.yaml"
    project = load_valid_project(str(path))
    project.config.max_epoch = 1
    project.multi_gpu.workers = 2
    save_project(project, str(path), backup=False)
    run_dir = run_dir_from(nnconsole(["train", str(path), "-q"]).stdout)
    [sync] = list(runs.iter_metrics(run_dir, "sync_check"))
    assert sync["identical"] is True
    building = list(runs.iter_metrics(run_dir, "dataset_cache"))
    assert building and [p for r in building for p in record_problems(r)] == []
    assert {(r["dataset"], r["total"]) for r in building if r["done"] == r["total"]} == {("training", 1437),
                                                                                          ("validation", 360)}
    cache = tmp_path / "digits" / "data" / ".nnconsole-cache"
    entries = [p for p in cache.iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert len(entries) == 2  # one per CSV, built once, no partial folder left
    assert not [p for p in cache.iterdir() if p.name.endswith(".partial")]
