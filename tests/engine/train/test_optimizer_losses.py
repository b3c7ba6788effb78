"""Every optimizer's loss in metrics.jsonl (issue 17): the optimizers after the first write ``optimizer_loss``
records with their name, beside the first optimizer's ``train`` records, which stay as they were."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from nnconsole.engine.rundir.protocol import OPTIMIZER_LOSS, TRAIN, record_problems
from tests.support.training import train_in_process
from tests.support.projects import gan_project
from nnconsole.engine.check.project_file import load_valid_project


def _records(run_dir: str) -> list:
    with open(os.path.join(run_dir, "metrics.jsonl")) as fh:
        return [json.loads(line) for line in fh if line.strip()]


def test_each_extra_optimizer_writes_its_loss_beside_the_train_record(tmp_path):
    run_dir, losses = train_in_process(load_valid_project(gan_project(str(tmp_path), epochs=2)), str(tmp_path / "r"))
    records = _records(run_dir)
    assert all(not record_problems(r) for r in records), [record_problems(r) for r in records]
    train = [r for r in records if r["type"] == TRAIN]
    extra = [r for r in records if r["type"] == OPTIMIZER_LOSS]
    assert train and len(extra) == len(train)  # the generator's optimizer runs at every iteration
    assert {r["optimizer"] for r in extra} == {"Optimizer_G"} and {r["network"] for r in extra} == {"Generator"}
    assert [r["iteration"] for r in extra] == [r["iteration"] for r in train]
    assert [r["epoch"] for r in extra] == [r["epoch"] for r in train]
    values = np.array([r["loss"] for r in extra])
    assert np.all(np.isfinite(values)) and np.all(values > 0)
    assert not np.allclose(values, [r["loss"] for r in train])  # the generator's loss, not the discriminator's
    assert all(r["lr"] == 0.01 for r in extra)


def test_an_optimizer_outside_its_range_writes_no_loss(tmp_path):
    """Only the windows in which the optimizer ran get a record (its end iteration bounds them)."""
    run_dir, _ = train_in_process(load_valid_project(gan_project(str(tmp_path), epochs=2, end_iteration=3)),
                                  str(tmp_path / "r"))
    records = _records(run_dir)
    extra = [r for r in records if r["type"] == OPTIMIZER_LOSS]
    train = [r for r in records if r["type"] == TRAIN]
    assert len(train) == 2 and [r["iteration"] for r in extra] == [train[0]["iteration"]]  # 4 iterations an epoch


@pytest.mark.mpi
def test_two_workers_write_the_one_worker_runs_optimizer_losses(tmp_path):
    """Averaged over the ranks (2 x 16 samples against 1 x 32, the logical batch kept), the generator's losses
    are the one-worker run's, at the same iterations."""
    from tests.support.cli import nnconsole, run_dir_from
    from tests.support.training import train_file_in_process
    from tests.support.projects import gan_2d_project

    runs = [train_file_in_process(gan_2d_project(str(tmp_path / "one"), 32, 1)),  # one worker, in-process
            run_dir_from(nnconsole(["train", gan_2d_project(str(tmp_path / "two"), 16, 2), "-q"]).stdout)]
    one, two = ([r for r in _records(d) if r["type"] == OPTIMIZER_LOSS] for d in runs)
    assert one and [r["iteration"] for r in one] == [r["iteration"] for r in two]
    assert np.allclose([r["loss"] for r in one], [r["loss"] for r in two], rtol=1e-4, atol=1e-6)


def test_replay_compares_every_optimizers_losses(tmp_path):
    """A replay whose generator's loss differs is reported, naming the optimizer (it checked the first one's only)."""
    from nnconsole.engine.launch.replay import metric_differences

    base = [{"type": TRAIN, "iteration": 4, "loss": 1.0, "error": 0.5},
            {"type": OPTIMIZER_LOSS, "optimizer": "Optimizer_G", "network": "Generator", "iteration": 4,
             "epoch": 1.0, "loss": 0.7, "lr": 0.01}]
    dirs = []
    for name, g_loss in (("a", 0.7), ("b", 0.9)):
        folder = tmp_path / name
        folder.mkdir()
        records = [dict(r) for r in base]
        records[1]["loss"] = g_loss
        (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
        dirs.append(str(folder))
    worst, problems = metric_differences(*dirs)
    assert abs(worst - 0.2) < 1e-9 and problems == ["optimizer_loss of Optimizer_G iteration 4 loss: 0.7 vs 0.9"]
    assert metric_differences(dirs[0], dirs[0]) == (0.0, [])
