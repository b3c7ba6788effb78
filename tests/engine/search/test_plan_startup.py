"""Issue 29, ``nnconsole search --plan``'s start-up terms: the search command's own start-up (measured by each
search process's age at its first trial, recorded in the study) is added once to the budget's time, and a
project with no finished trial takes each trial's start-up from its finished runs' records plus the measured
start of the command, instead of leaving it out."""
from __future__ import annotations

import math
import os
import shutil

from nnconsole import templates as project_templates
from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.launch.launcher import plan_for
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.protocol import RunStatus
from nnconsole.engine.search.runner import run_search
from nnconsole.engine.search.split_plan import cli_start_s, run_durations, split_estimates
from nnconsole.engine.search.study import SEARCH_AGE, process_age_s, search_startups
from tests.support.cli import nnconsole
from tests.support.search_fakes import FakeRunner, fake_job


def test_the_search_start_up_is_added_once_to_the_budget(tmp_path):
    project = load_valid_project(str(project_templates.template_path("digits_search") / "project.yaml"),
                                 check_datasets=False)
    plan = lambda n: plan_for(project, n, "cpu")  # noqa: E731
    without = split_estimates(project, 2, 7, 3, plan, overhead_s=4.0)
    with_startup = split_estimates(project, 2, 7, 3, plan, overhead_s=4.0, startup_s=6.5)
    for a, b in zip(without, with_startup):
        assert b.trial_s == a.trial_s
        assert math.isclose(b.total_s, a.total_s + 6.5)
        assert math.isclose(a.total_s, math.ceil(7 / a.parallel) * a.trial_s)


def test_each_search_process_records_its_start_up_in_the_study(tmp_path):
    storage = f"sqlite:///{tmp_path / 's.db'}"
    job = fake_job(storage, trials=3, pruner="none")
    before = process_age_s()
    run_search(job, say=lambda line: None, runner=FakeRunner())
    ages = [t.user_attrs[SEARCH_AGE] for t in job.study.get_trials()]
    assert len(ages) == 3 and before - 0.01 <= ages[0] <= ages[1] <= ages[2] <= process_age_s() + 0.01
    assert search_startups(storage, "s") == [ages[0]]  # one process: its age at its first trial
    assert search_startups(storage, "no such study") == [] and search_startups("", "s") == []


def test_a_project_without_trials_takes_the_trial_start_up_from_its_runs(tmp_path):
    folder = tmp_path / "p"
    shutil.copytree(project_templates.template_path("digits_search"), folder)
    project = str(folder / "project.yaml")
    root = runs.results_root(project)
    for name, state, seconds in (("20260101_000000", RunStatus.FINISHED, 12.0),
                                 ("20260101_000100", RunStatus.STOPPED, 5.0)):
        os.makedirs(os.path.join(root, name))
        runs.write_status(os.path.join(root, name), runs.StatusRecord(status=state, started=1000.0,
                                                                      finished=1000.0 + seconds, epoch=3, workers=1))
    assert run_durations(project) == [(12.0, 3, 1)]  # the finished run only
    assert 0.0 < cli_start_s(tries=1) < 60.0
    out = nnconsole(["search", project, "--plan", "--device", "cpu", "--trials", "4"]).stdout
    assert "(median of 1 the project's finished runs + " in out, out
    assert "the search's own start-up: " in out and "the command's start measured now" in out, out
