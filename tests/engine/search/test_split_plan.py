"""Parallel trials or faster trials: the K x G splits, the refusal of a split beyond the machine and the
per-trial overhead measured from a study's finished trials (issue 29)."""
from __future__ import annotations

import pytest

from nnconsole import templates as project_templates
from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.launch.launcher import plan_for
from nnconsole.engine.search.split_plan import (SplitError, check_split, overheads_by_workers, split_estimates,
                                                 trial_overhead)


def test_a_split_beyond_the_devices_is_refused_with_one_that_fits():
    check_split(2, 4, 8)
    with pytest.raises(SplitError, match="--parallel 2 "):
        check_split(3, 4, 8)


def test_trial_overhead_is_the_median_time_besides_the_epochs():
    epoch_s = {1: 2.0, 2: 1.2}.get
    durations = [(13.0, 4, 1), (9.0, 2, 1), (7.4, 3, 2), (100.0, 1, 1)]  # extra: 5, 5, 3.8, 98
    assert trial_overhead(durations, epoch_s) == pytest.approx(5.0)
    assert trial_overhead([], epoch_s) is None


def test_every_split_of_the_devices_is_predicted_and_one_recommended():
    project = load_valid_project(str(project_templates.template_path("digits_search") / "project.yaml"))
    splits = split_estimates(project, 4, 20, 5, lambda n: plan_for(project, n, "cpu"), overhead_s=6.0)
    assert sorted((s.parallel, s.workers) for s in splits) == [(1, 4), (2, 2), (4, 1)]
    for s in splits:
        assert s.trial_s >= 6.0
        assert s.total_s == pytest.approx(-(-20 // s.parallel) * s.trial_s)
    assert sum("fastest" in s.note for s in splits) >= 1
    assert sum("recommended for TPE" in s.note for s in splits) == 1


def test_each_g_has_its_own_measured_overhead_else_the_overall_one():
    epoch_s = {1: 2.0, 2: 1.2}.get
    durations = [(13.0, 4, 1), (9.0, 2, 1), (9.4, 3, 2), (10.4, 3, 2)]  # G=1: 5, 5; G=2: 5.8, 6.8
    assert overheads_by_workers(durations, epoch_s, [1, 2, 4]) == pytest.approx({1: 5.0, 2: 6.3, 4: 5.4})
