"""The TRAINING tab's search trials leave out the runs of a large-batch study (issue 30): ``nnconsole study batch``
tags its points' runs in ``trial.json`` as the search does, numbered from 0 as well, with ``kind: batch_study``."""
from __future__ import annotations

import pytest

from nnconsole.app.training.history import collect_runs
from nnconsole.app.training.search_trials import collect_trials
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.trials import KIND, STUDY_POINT, write_trial
from tests.support.runs import search_trial_run

pytestmark = pytest.mark.gui


def test_a_study_point_numbered_like_a_trial_does_not_replace_it(digits_project):
    search_trial_run(digits_project, 0, {"optimizer.learning_rate": 0.01}, 0.10, 400_000)
    point_run = search_trial_run(digits_project, 1, {}, 0.05, 400_000)  # started after trial 0
    write_trial(point_run, {KIND: STUDY_POINT, "trial": 0, "study": "digits-batch", "point": "w2-linear-warmup0",
                            "state": "complete"})
    trials = collect_trials(collect_runs(runs.results_root(digits_project)))
    assert [(t.number, t.params, t.error) for t in trials] == [(0, {"optimizer.learning_rate": 0.01}, 0.10)]
