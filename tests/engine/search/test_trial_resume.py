"""Issue 29: a trial interrupted by a kill -9 or a stop of its search continues its own run from the run's
checkpoint when the search resumes (``nnconsole train --resume`` on that run directory), not from epoch 0; the
study holds the trial once (the interrupted one failed and not counted, its re-run complete on the same run
directory, tagged with the new trial) and the pruner's curve of the re-run runs from epoch 1 to the last."""
from __future__ import annotations

import glob
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
from optuna.trial import TrialState

from nnconsole.engine.project.io import load_project
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.trials import read_trial
from nnconsole.engine.search.study import NOT_COUNTED, finished_durations, open_study
from nnconsole.engine.test_seams import seam_environment
from tests.support.cli import nnconsole
from tests.support.paths import ROOT
from tests.support.projects import digits_search_copy

EPOCHS = 3
ROWS, VALIDATION_ROWS = 480, 96  # the template's first rows: the claim is about checkpoints, not accuracy
PER_EPOCH = ROWS // 32  # 15 iterations an epoch (batch 32)
PAUSE_AT = 20  # in epoch 2, after epoch 1's checkpoint; a multiple of the template's log_interval (10), so the
# train record that shows the trial reached its pause is written


def _project(tmp_path) -> str:
    return digits_search_copy(tmp_path, rows=ROWS, validation_rows=VALIDATION_ROWS, pruner="none", trials=2,
                              epochs=EPOCHS, params=[{"target": "optimizer.learning_rate", "kind": "log_float",
                                                      "low": 1e-3, "high": 1e-2}])


def _search_paused(project: str) -> subprocess.Popen:
    """``nnconsole search`` whose trials pause at PAUSE_AT (a test seam) until they are stopped."""
    env = dict(os.environ, PYTHONPATH=ROOT, **seam_environment(pause_at_iteration=PAUSE_AT))
    return subprocess.Popen([sys.executable, "-m", "nnconsole.engine.cli.main", "search", project, "--device", "cpu"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT)


def _wait_for_paused_trial(project: str, proc: subprocess.Popen) -> str:
    """The first trial's run directory once it trains past its first checkpoint (it pauses there)."""
    deadline = time.time() + 240
    while time.time() < deadline:
        found = runs.list_runs(runs.results_root(project))
        if found and read_trial(found[0]) and runs.list_checkpoints(found[0]) and any(
                r["iteration"] >= PAUSE_AT for r in runs.iter_metrics(found[0], "train")):
            return found[0]
        assert proc.poll() is None, proc.communicate()[0]
        time.sleep(0.1)
    raise AssertionError("the first trial never reached its pause")


def _check_resumed(project: str, run_dir: str, out: str) -> None:
    storage = "sqlite:///" + os.path.join(runs.results_root(project), "search.db")
    study = open_study(storage, "digits_search", load_project(project).search)
    trials = sorted(study.get_trials(), key=lambda t: t.number)
    interrupted = [t for t in trials if t.state == TrialState.FAIL]
    done = [t for t in trials if t.state == TrialState.COMPLETE]
    assert len(interrupted) == 1 and interrupted[0].user_attrs.get(NOT_COUNTED), out
    assert interrupted[0].number == 0 and len(done) == 2, out
    rerun = next(t for t in done if t.user_attrs.get("rerun_of") == 0)
    assert rerun.user_attrs["run_dir"] == run_dir  # the same run, continued
    assert rerun.params == interrupted[0].params
    assert "(continued run of trial 0 from its checkpoint)" in out, out
    assert sorted(rerun.intermediate_values) == list(range(1, EPOCHS + 1))  # the curve from epoch 1, once each
    assert [r["epoch"] for r in runs.iter_metrics(run_dir, "validation")] == list(range(1, EPOCHS + 1))
    resumed = re.findall(r"resumed from \S+: epoch (\d+), iteration (\d+)", "".join(
        open(p, errors="replace").read() for p in glob.glob(os.path.join(run_dir, "logs", "*"))))
    assert resumed and int(resumed[-1][1]) >= PER_EPOCH, resumed  # continued from its checkpoint, not from iteration 0
    tag = read_trial(run_dir)
    assert tag["trial"] == rerun.number and tag["resumed_from_trial"] == 0 and tag["state"] == "complete"
    assert runs.read_status(run_dir).status.value == "finished"
    assert len(runs.list_runs(runs.results_root(project))) == 2  # one run per counted trial, no third
    assert len({json.dumps(t.params, sort_keys=True) for t in done}) == 2
    assert len(finished_durations(storage, "digits_search")) == 1  # --plan's timing leaves the continued one out


@pytest.mark.slow
def test_a_trial_of_a_search_killed_with_sigkill_continues_from_its_checkpoint(tmp_path):
    project = _project(tmp_path)
    proc = _search_paused(project)
    try:
        run_dir = _wait_for_paused_trial(project, proc)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    out = nnconsole(["search", project, "--device", "cpu"], timeout=500).stdout
    assert "resuming: trial(s) 0 " in out, out
    _check_resumed(project, run_dir, out)


@pytest.mark.slow
def test_a_trial_of_a_stopped_search_continues_from_its_checkpoint(tmp_path):
    project = _project(tmp_path)
    proc = _search_paused(project)
    run_dir = _wait_for_paused_trial(project, proc)
    proc.send_signal(signal.SIGTERM)  # as Ctrl-C: the running trial stops with a checkpoint
    first = proc.communicate(timeout=120)[0]
    assert proc.returncode == 3 and "will run again on resume" in first, first
    out = nnconsole(["search", project, "--device", "cpu"], timeout=500).stdout
    _check_resumed(project, run_dir, out)
