"""Progress of a dataset cache build (issue 18): run records from the trainer, the terminal printer's lines."""
from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest

from nnconsole.engine.rundir import store as runs
from nnconsole.engine.launch.progress import ProgressPrinter
from nnconsole.engine.rundir.protocol import record_problems
from nnconsole.engine.check.project_file import load_valid_project
from tests.support.paths import TEMPLATES

DIGITS = Path(TEMPLATES) / "digits_cnn"


@pytest.mark.slow
def test_a_run_records_its_dataset_cache_build(tmp_path):
    from tests.support.training import train_in_process

    shutil.copytree(DIGITS, tmp_path / "digits")
    project = load_valid_project(str(tmp_path / "digits" / "project.yaml"))
    project.config.max_epoch = 1
    run_dir, _ = train_in_process(project, str(tmp_path / "results"))
    records = list(runs.iter_metrics(run_dir, "dataset_cache"))
    assert records and all(record_problems(r) == [] for r in records)
    for split, size in (("training", 1437), ("validation", 360)):
        mine = [r for r in records if r["dataset"] == split]
        assert mine[0]["done"] == 0 and mine[-1]["done"] == mine[-1]["total"] == size
    # a second run finds the cache: nothing to build, nothing recorded
    run_dir, _ = train_in_process(project, str(tmp_path / "results"))
    assert list(runs.iter_metrics(run_dir, "dataset_cache")) == []


def test_terminal_shows_the_build_every_tenth_and_at_the_end():
    out = io.StringIO()
    printer = ProgressPrinter(stream=out, live=False)
    for done in range(0, 1001, 50):
        printer({"type": "dataset_cache", "dataset": "training", "done": done, "total": 1000,
                 "eta": (1000 - done) / 100.0})
    lines = out.getvalue().splitlines()
    assert lines[0] == "building the training dataset cache   0% (0/1,000 images) ETA --:--" or \
        lines[0].startswith("building the training dataset cache   0% (0/1,000 images)")
    assert len(lines) == 11
    assert lines[4] == "building the training dataset cache  40% (400/1,000 images) ETA 00:06"
    assert lines[-1].startswith("building the training dataset cache 100% (1,000/1,000 images)")
    live = io.StringIO()
    printer = ProgressPrinter(stream=live, live=True)
    printer({"type": "dataset_cache", "dataset": "validation", "done": 3, "total": 10, "eta": 7.0})
    assert "\rbuilding the validation dataset cache  30% (3/10 images) ETA 00:07" in live.getvalue()
