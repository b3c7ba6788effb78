"""Issue 29, results that can be trusted: the best trial of a search is a normal run, and ``nnconsole replay`` of
it trains again to the same final validation error and loss and the same best error the study holds."""
from __future__ import annotations

import os
import re

import pytest

from nnconsole.engine.project.io import load_project
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.search.study import best_trials, open_study
from tests.support.cli import nnconsole
from tests.support.projects import digits_search_copy

TOLERANCE = 1e-6  # same seed, same snapshot, same worker count on this machine: the same arithmetic


def _final_validation(run_dir: str) -> dict:
    return [r for r in runs.iter_metrics(run_dir, "validation")][-1]


@pytest.mark.slow
def test_the_best_trials_replay_reproduces_its_metrics(tmp_path):
    # The first 320 training / 96 validation rows: the claim is that a replay repeats the best trial's
    # arithmetic, which any amount of data shows; the full set only made each epoch longer.
    project = digits_search_copy(tmp_path, rows=320, validation_rows=96, trials=3, epochs=2, pruner="none", params=[
        {"target": "optimizer.learning_rate", "kind": "log_float", "low": 1e-3, "high": 3e-2},
        {"target": "layers.fc1.out_shape", "kind": "int", "low": 16, "high": 64, "step": 16}])
    nnconsole(["search", project, "--device", "cpu"], timeout=500)
    study = open_study("sqlite:///" + os.path.join(runs.results_root(project), "search.db"), "digits_search",
                       load_project(project).search)
    best = best_trials(study)[0]
    run_dir = best.user_attrs["run_dir"]
    out = nnconsole(["replay", run_dir, "-q"], timeout=300).stdout
    assert "metrics reproduced" in out, out
    replayed = re.search(r"replaying \S+ into (\S+)", out).group(1)
    original, again = _final_validation(run_dir), _final_validation(replayed)
    assert again["epoch"] == original["epoch"] == 2
    assert abs(again["error"] - original["error"]) <= TOLERANCE
    assert abs(again["loss"] - original["loss"]) <= TOLERANCE * max(1.0, abs(original["loss"]))
    assert abs(runs.read_status(replayed).best_validation_error - best.value) <= TOLERANCE  # the study's value
