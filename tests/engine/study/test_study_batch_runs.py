"""``nnconsole study batch`` end to end (issue 30) on the digits template cut down: each point a real run, tagged,
recorded in study.json with what it measured, its simulated point equal to a direct ``train --simulate-workers``
run, and a study killed mid-point resumed without training its complete points again."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from nnconsole.engine.errors import ExitCode
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.batch_study import read_study, study_dir
from nnconsole.engine.rundir.trials import STUDY_POINT, read_trial
from tests.support.cli import nnconsole, run_dir_from
from tests.support.paths import ROOT
from tests.support.projects import digits_subset_project
from tests.support.training import final_params

pytestmark = pytest.mark.slow  # each study trains several runs (CLI subprocesses)


LINEAR_STUDY = ["--workers", "1,2", "--policy", "linear", "--epochs", "1", "--device", "cpu"]


@pytest.fixture(scope="module")
def linear_study(tmp_path_factory):
    """One small simulated study (1 and 2 workers, linear policy, one epoch), built once for the tests that only
    read it: the project file and the study command's output."""
    project = digits_subset_project(str(tmp_path_factory.mktemp("linear") / "digits"))
    out = nnconsole(["study", "batch", project, *LINEAR_STUDY], timeout=300).stdout
    return project, out


def test_a_small_study_records_each_point_as_a_run_equal_to_direct_simulation(linear_study):
    project, out = linear_study
    study = read_study(study_dir(runs.results_root(project), "digits_cnn-batch"))
    assert [(p.key, p.state, p.logical_batch, p.learning_rate, p.simulated) for p in study.points] == [
        ("w1-linear-warmup0", "complete", 32, pytest.approx(0.001), False),
        ("w2-linear-warmup0", "complete", 64, pytest.approx(0.002), True)]
    for index, point in enumerate(study.points):
        assert os.path.isdir(point.run_dir) and os.path.dirname(point.run_dir) == runs.results_root(project)
        assert read_trial(point.run_dir) is None  # not a search trial: the trials table leaves it out
        tags = read_trial(point.run_dir, (STUDY_POINT,))
        assert (tags["study"], tags["point"], tags["trial"], tags["state"]) == ("digits_cnn-batch", point.key,
                                                                                 index, "complete")
        best = runs.read_status(point.run_dir).best_validation_error
        assert point.validation_error == pytest.approx(best) and 0 <= best <= 1
        assert point.measured_epoch_seconds > 0
        assert point.predicted_epoch_seconds > 0  # the one-worker point measured the compute
    assert study.points[1].predicted_epoch_seconds < study.points[0].predicted_epoch_seconds
    assert study.recommendation is not None and study.recommendation.reason in out
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:3] == ["workers", "logical", "batch"])
    assert lines[header + 1].split()[:6] == ["1", "32", "linear", "0", "0.001", f"{study.points[0].validation_error * 100:.2f}%"]
    assert lines[header + 2].split()[-1] == "complete" and "(sim)" in lines[header + 2]

    direct = run_dir_from(nnconsole(["train", project, "-q", "--simulate-workers", "2", "--epochs", "1",
                                     "--device", "cpu"], timeout=120).stdout)
    mine, theirs = final_params(study.points[1].run_dir), final_params(direct)
    assert sorted(mine) == sorted(theirs)
    assert max(float(np.max(np.abs(mine[k] - theirs[k]))) for k in mine) <= 1e-6
    assert "recommendation:" in nnconsole(["study", "show", project]).stdout


def _study_process(project: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.Popen([sys.executable, "-m", "nnconsole.engine.cli.main", "study", "batch", project, "--workers",
                             "1,2", "--policy", "none", "--epochs", "40", "--device", "cpu"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def _wait_for_the_second_point(proc: subprocess.Popen, project: str) -> None:
    """Until the study's second point trains (its run has train records)."""
    folder = study_dir(runs.results_root(project), "digits_cnn-batch")
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        study = read_study(folder)
        found = runs.list_runs(runs.results_root(project))
        if study and study.points[1].state == "running" and len(found) == 2 \
                and list(runs.iter_metrics(found[-1], "train")):
            return
        assert proc.poll() is None, proc.communicate()[0]
        time.sleep(0.05)
    raise AssertionError("the second point never started")


def test_a_killed_study_resumes_without_training_its_complete_points_again(tmp_path):
    project = digits_subset_project(str(tmp_path / "digits"), rows=128, validation_rows=32)
    folder = study_dir(runs.results_root(project), "digits_cnn-batch")
    proc = _study_process(project)
    _wait_for_the_second_point(proc, project)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    first = read_study(folder).points[0]
    assert first.state == "complete" and read_study(folder).points[1].state == "running"

    out = nnconsole(["study", "batch", project, "--workers", "1,2", "--policy", "none", "--epochs", "40",
                     "--device", "cpu"], timeout=300).stdout
    assert "resuming: point(s) w2-none-warmup0 will train again from the start" in out
    assert "1 point(s) complete already: not trained again" in out
    study = read_study(folder)
    assert [p.state for p in study.points] == ["complete", "complete"]
    assert study.points[0].run_dir == first.run_dir and study.points[0].validation_error == first.validation_error
    all_runs = runs.list_runs(runs.results_root(project))
    assert len(all_runs) == 3  # point 1 once, point 2 killed and trained again
    assert study.points[1].run_dir == all_runs[-1]
    assert runs.read_status(study.points[1].run_dir).status == "finished"


def test_ctrl_c_stops_the_running_point_cleanly_and_records_it_stopped(tmp_path):
    project = digits_subset_project(str(tmp_path / "digits"), rows=128, validation_rows=32)
    proc = _study_process(project)
    _wait_for_the_second_point(proc, project)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal sends: the study and its training alike
    out = proc.communicate(timeout=120)[0]
    assert proc.returncode == ExitCode.STOPPED, out
    assert "stopped: run the same command again to train the points left" in out
    study = read_study(study_dir(runs.results_root(project), "digits_cnn-batch"))
    assert [p.state for p in study.points] == ["complete", "stopped"], out
    second = study.points[1]
    assert second.validation_error is None and os.path.isdir(second.run_dir)
    assert read_trial(second.run_dir, (STUDY_POINT,))["state"] == "stopped"
    assert runs.read_status(second.run_dir).status != "running"


@pytest.mark.mpi
def test_real_workers_train_the_point_the_simulation_trained(tmp_path, linear_study):
    # The simulated point is linear_study's; the real study trains a fresh copy of the same project (same
    # template, rows and seed), so the two runs start alike and only the workers differ.
    shared, _ = linear_study
    project = digits_subset_project(str(tmp_path / "digits"))
    nnconsole(["study", "batch", project, *LINEAR_STUDY, "--study", "real", "--real"], timeout=300)
    simulated = read_study(study_dir(runs.results_root(shared), "digits_cnn-batch")).points[1]
    real = read_study(study_dir(runs.results_root(project), "real")).points[1]
    assert (real.state, real.simulated, runs.read_plan(real.run_dir).workers) == ("complete", False, 2)
    assert runs.read_plan(real.run_dir).simulated is False and runs.read_plan(simulated.run_dir).simulated is True
    mine, theirs = final_params(real.run_dir), final_params(simulated.run_dir)
    assert max(float(np.max(np.abs(mine[k] - theirs[k]))) for k in mine) <= 1e-5
    assert real.validation_error == pytest.approx(simulated.validation_error, abs=1e-6)
