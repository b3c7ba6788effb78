"""The search's result: the best trial, or the Pareto front of error x multiply-adds within NNC's error bound
(issue 29)."""
from __future__ import annotations

import optuna

from nnconsole.engine.project.model import Search
from nnconsole.engine.search.study import best_trials


def _study(values) -> optuna.Study:
    study = optuna.create_study(directions=["minimize"] * len(values[0]))
    for v in values:
        study.add_trial(optuna.trial.create_trial(values=list(v)))
    return study


def test_the_front_holds_the_trials_no_other_beats_on_both():
    study = _study([(0.05, 90000), (0.06, 40000), (0.07, 50000), (0.04, 120000), (0.30, 10000)])
    assert [t.values for t in best_trials(study)] == [[0.30, 10000], [0.06, 40000], [0.05, 90000], [0.04, 120000]]


def test_nnc_error_bound_keeps_bad_trials_off_the_front():
    study = _study([(0.05, 90000), (0.06, 40000), (0.30, 10000)])
    assert [t.values for t in best_trials(study, Search(error_max=0.1))] == [[0.06, 40000], [0.05, 90000]]


def test_one_objective_gives_the_best_trial():
    study = _study([(0.2,), (0.1,), (0.3,)])
    assert [t.values for t in best_trials(study)] == [[0.1]]
