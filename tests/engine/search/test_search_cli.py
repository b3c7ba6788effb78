"""``nnconsole search`` end to end on the digits_search template: each trial a normal run tagged with its trial,
K x G beyond the machine refused, --plan's table, a search killed with SIGKILL resumed with every trial once,
and a learning-rate search that finds a rate as good as the best of a grid measured here (issue 29)."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
import yaml
from optuna.trial import TrialState

from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.protocol import SNAPSHOT_FILE
from nnconsole.engine.search.study import open_study
from nnconsole.engine.rundir.protocol import TRIAL_FILE
from nnconsole.engine.project.io import load_project
from tests.support.cli import nnconsole
from tests.support.projects import digits_search_copy
from tests.support.paths import ROOT

EPOCHS = 2


def _study(project: str):
    storage = "sqlite:///" + os.path.join(runs.results_root(project), "search.db")
    return open_study(storage, "digits_search", load_project(project).search)


def test_more_processes_than_the_machine_has_are_refused(tmp_path):
    project = digits_search_copy(tmp_path)
    out = nnconsole(["search", project, "--parallel", str(os.cpu_count() + 1), "--device", "cpu"], check=False)
    assert out.returncode == 2 and "--parallel" in out.stderr and "device(s)" in out.stderr
    assert not os.path.exists(runs.results_root(project) + "/search.db")  # refused before anything was made


def test_plan_prints_each_split_of_the_devices(tmp_path):
    out = nnconsole(["search", digits_search_copy(tmp_path), "--plan", "--device", "cpu", "--trials", "8"]).stdout
    assert "K trials at once" in out and "recommended for TPE" in out
    assert len([line for line in out.splitlines() if line[:1].isdigit()]) >= 1


@pytest.mark.slow
def test_a_killed_search_resumes_and_each_trial_is_a_run(tmp_path):
    project = digits_search_copy(tmp_path, pruner="none")
    env = dict(os.environ, PYTHONPATH=ROOT)
    cmd = [sys.executable, "-m", "nnconsole.engine.cli.main", "search", project, "--trials", "3", "--epochs", "1",
           "--device", "cpu"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT)
    deadline = time.time() + 240
    while time.time() < deadline:
        line = proc.stdout.readline()
        if line.startswith("trial 0 complete") or not line:
            break
    time.sleep(1)  # a later trial is training (trial 1, or on a fast machine trial 2)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    out = nnconsole(["search", project, "--trials", "3", "--epochs", "1", "--device", "cpu"], timeout=400).stdout
    resumed = re.search(r"resuming: trial\(s\) (\d+) ", out)
    assert resumed, out
    killed = int(resumed.group(1))
    study = _study(project)
    done = [t for t in study.get_trials() if t.state == TrialState.COMPLETE]
    assert len(done) == 3 and len({json.dumps(t.params, sort_keys=True) for t in done}) == 3
    failed = [t for t in study.get_trials() if t.state == TrialState.FAIL]
    assert killed >= 1 and [t.number for t in failed] == [killed]
    assert any(t.user_attrs.get("rerun_of") == killed and t.params.items() >= failed[0].params.items() for t in done)
    for t in done:  # each trial is a normal, finished run, tagged with its trial
        run_dir = t.user_attrs["run_dir"]
        assert runs.read_status(run_dir).status.value == "finished"
        tag = json.loads(open(os.path.join(run_dir, TRIAL_FILE)).read())
        assert tag["trial"] == t.number and tag["params"] == t.params
        assert os.path.isfile(os.path.join(run_dir, SNAPSHOT_FILE))
        assert load_project(os.path.join(run_dir, SNAPSHOT_FILE)).search is None  # replayable as any run


@pytest.mark.slow
def test_a_learning_rate_search_finds_a_rate_within_one_point_of_a_grid(tmp_path):
    project = digits_search_copy(tmp_path, params=[{"target": "optimizer.learning_rate", "kind": "log_float", "low": 1e-5,
                                          "high": 1.0}], trials=8, pruner="median")
    grid = {}
    for lr in (1e-3, 3e-3, 1e-2, 3e-2):  # the grid, measured here with the same epochs and seed
        data = yaml.safe_load(open(project).read())
        data["optimizer"]["learning_rate"] = lr
        grid_file = os.path.join(os.path.dirname(project), f"grid_{lr:g}.yaml")
        open(grid_file, "w").write(yaml.safe_dump(data, sort_keys=False))
        nnconsole(["train", grid_file, "--epochs", str(EPOCHS), "--device", "cpu", "-q"])
        run_dir = runs.list_runs(runs.results_root(grid_file))[-1]
        grid[lr] = runs.read_status(run_dir).best_validation_error
    out = nnconsole(["search", project, "--epochs", str(EPOCHS), "--device", "cpu", "--parallel",
                     str(min(2, os.cpu_count()))], timeout=600).stdout
    study = _study(project)
    best = study.best_trial
    assert best.value <= min(grid.values()) + 0.01, (grid, out)
    print(f"grid {grid}; search best {best.value:.4f} at lr {best.params['optimizer.learning_rate']:.3g}")
