"""``nnconsole study batch`` / ``study show`` (issue 30) without training: option checks with their messages, the
grid, the refusals that protect a study, resume's choice of points (a fake trial runner), and the table."""
from __future__ import annotations

import os
import threading

import pytest

from nnconsole.engine.cli import study as study_cli
from nnconsole.engine.cli.main import main
from nnconsole.engine.errors import ExitCode
from nnconsole.engine.launch.launcher import plan_for
from nnconsole.engine.plan.batch_recommendation import recommend
from nnconsole.engine.plan.record import PlanError
from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.batch_study import BatchStudy, StudyPoint, read_study, study_dir, write_study
from nnconsole.engine.rundir.lock import RunLock
from nnconsole.engine.search.trial_run import TrialOutcome, TrialRequest
from nnconsole.engine.study.grid import StudyError, grid, merge, planned_points
from nnconsole.engine.study.run import StudyJob, point_request, run_study
from tests.support.projects import digits_subset_project


def _refusal(capsys, *args: str) -> str:
    with pytest.raises(SystemExit) as exc:
        main(["study", "batch", "p.yaml", *args])
    assert exc.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize("workers, says", [
    ("1,2,x", "'x' is not a whole number"), ("2,4", "include 1, the one-worker baseline"),
    ("1,1", "listed twice"), ("0,1", "0 workers is outside 1..1024"), ("1,,2", "separated by commas"),
    ("1,2048", "2048 workers is outside"),
])
def test_bad_worker_lists_are_refused_with_what_to_give(capsys, workers, says):
    err = _refusal(capsys, "--workers", workers)
    assert "argument --workers" in err and says in err


def test_an_unknown_policy_is_refused_naming_the_choices(capsys):
    err = _refusal(capsys, "--workers", "1,2", "--policy", "linear,cubic")
    assert "unknown policy 'cubic'; choose from linear, sqrt, none" in err


@pytest.mark.parametrize("option, value, says", [
    ("--warmup", "0,x", "'x' is not a number of epochs"), ("--warmup", "-1", "outside 0..1000"),
    ("--tolerance", "abc", "points of validation error"), ("--tolerance", "-0.5", "from 0 to under 100"),
    ("--parallel", "0", "must be 1 or more"), ("--study", "../elsewhere", "names the study's folder"),
    ("--study", "a/b", "letters, digits"),
])
def test_bad_warmups_tolerances_parallel_and_names_are_refused(capsys, option, value, says):
    assert says in _refusal(capsys, "--workers", "1,2", option, value)


def test_simulate_and_real_exclude_each_other(capsys):
    assert "not allowed with argument" in _refusal(capsys, "--workers", "1,2", "--simulate", "--real")


def test_a_warmup_is_trained_only_where_the_learning_rate_is_scaled():
    assert grid([4, 1], ["none", "linear"], [2, 0]) == [
        (1, "none", 0.0), (1, "linear", 0.0), (4, "none", 0.0), (4, "linear", 0.0), (4, "linear", 2.0)]


@pytest.fixture
def digits(tmp_path):
    return digits_subset_project(str(tmp_path / "digits"))


def test_real_workers_beyond_the_devices_and_too_many_at_once_are_refused(digits, capsys, monkeypatch):
    monkeypatch.setattr(study_cli, "machine_devices", lambda device, gpus: 2)
    assert main(["study", "batch", digits, "--workers", "1,4", "--real", "--device", "cpu"]) == ExitCode.BAD_INPUT
    assert "--real: 4 workers need 4 devices, this machine has 2" in capsys.readouterr().err
    assert main(["study", "batch", digits, "--workers", "1,2", "--parallel", "3", "--device", "cpu"]) == 2
    assert "--parallel 3 x 1 process(es) per point = 3, but this machine has 2 device(s); use --parallel 2" \
        in capsys.readouterr().err


def test_a_point_the_plan_refuses_is_named_before_anything_trains(digits):
    project = load_valid_project(digits)

    def plan(p, n):
        if n == 16:
            raise PlanError("config.batch_size 32 cannot be split across 16 workers")
        return plan_for(p, n, "cpu")
    with pytest.raises(StudyError, match="^16 workers with policy linear: config.batch_size 32 cannot be split "
                       "across 16 workers; leave 16 out of --workers$"):
        planned_points(project, grid([1, 16], ["linear"], [0]), True, plan)


def test_a_rerun_with_other_epochs_is_refused_and_the_study_kept(digits, capsys):
    folder = study_dir(runs.results_root(digits), "s")
    write_study(folder, BatchStudy(name="s", project=digits, per_worker_batch=32, epochs=3))
    assert main(["study", "batch", digits, "--workers", "1,2", "--epochs", "1", "--study", "s"]) == 2
    assert "was made with --epochs 3 and batch 32 per worker" in capsys.readouterr().err
    assert read_study(folder).epochs == 3 and read_study(folder).points == []


def _job(digits: str, points, calls: list, folder: str) -> tuple:
    """A study job on ``digits`` and a fake trial runner that records what each point would train."""
    project = load_valid_project(digits)
    study = BatchStudy(name="s", project=digits, per_worker_batch=32, epochs=1, points=points)
    request = TrialRequest(results_root=runs.results_root(digits), trials_dir=folder, epochs=1)

    def runner(request, number, project, tags, on_epoch, should_stop):
        calls.append((tags["point"], request.workers, request.simulate_workers, project.multi_gpu.scaling,
                      project.multi_gpu.warmup_epochs))
        return TrialOutcome(exit_code=0, error=0.1 * number)

    return StudyJob(folder, study, project, request, lambda p, n: plan_for(p, n, "cpu")), runner


def test_a_rerun_trains_every_point_but_the_complete_ones(digits, tmp_path):
    states = ["complete", "running", "stopped", "failed", "queued"]
    points = [StudyPoint(workers=w, policy="linear", state=s, validation_error=0.5 if s == "complete" else None)
              for w, s in zip([1, 2, 4, 8, 16], states)]
    calls: list = []
    folder = str(tmp_path / "study")
    job, runner = _job(digits, points, calls, folder)
    assert run_study(job, say=lambda text: None, runner=runner) == ExitCode.OK
    assert [c[0] for c in calls] == ["w2-linear-warmup0", "w4-linear-warmup0", "w8-linear-warmup0",
                                     "w16-linear-warmup0"]
    assert all(c[1:] == (1, c[2], "linear", 0.0) and c[2] == int(c[0][1:].split("-")[0]) for c in calls)
    saved = read_study(folder)
    assert [p.state for p in saved.points] == ["complete"] * 5
    assert saved.points[0].validation_error == 0.5  # the complete point kept what it measured
    assert saved.recommendation is not None and saved.recommendation.baseline_error == 0.5


def test_a_study_another_process_runs_is_refused(digits, tmp_path):
    folder = str(tmp_path / "study")
    calls: list = []
    job, runner = _job(digits, [StudyPoint(workers=1, policy="none")], calls, folder)
    os.makedirs(folder)
    with RunLock(folder):
        with pytest.raises(StudyError, match="is being run by another nnconsole process"):
            run_study(job, say=lambda text: None, runner=runner, stop=threading.Event())
    assert calls == []


def test_show_prints_the_table_and_the_recommendation(digits, capsys):
    folder = study_dir(runs.results_root(digits), "s")
    points = [StudyPoint(1, "none", logical_batch=32, learning_rate=0.001, state="complete", validation_error=0.02,
                         predicted_epoch_seconds=0.4, measured_epoch_seconds=0.45),
              StudyPoint(8, "linear", 2.0, logical_batch=256, learning_rate=0.008, simulated=True, state="complete",
                         validation_error=0.024, predicted_epoch_seconds=0.06, measured_epoch_seconds=0.5),
              StudyPoint(32, "none", logical_batch=1024, learning_rate=0.001, simulated=True, state="queued")]
    study = BatchStudy(name="s", project=digits, per_worker_batch=32, epochs=5, points=points)
    study.recommendation = recommend(points, study.tolerance)
    write_study(folder, study)
    assert main(["study", "show", digits]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[2].split() == ["workers", "logical", "batch", "policy", "warmup", "LR", "val", "error", "predicted",
                              "s/epoch", "measured", "s/epoch", "state"]
    assert out[3].split() == ["1", "32", "none", "0", "0.001", "2.00%", "0.4", "0.45", "complete"]
    assert out[4].split() == ["8", "256", "linear", "2", "0.008", "2.40%", "0.06", "0.5", "(sim)", "complete"]
    assert out[5].split() == ["32", "1024", "none", "0", "0.001", "-", "-", "-", "queued"]
    assert out[-1].startswith("recommendation: 8 workers (logical batch 256) with linear learning-rate scaling and "
                              "a 2-epoch warm-up: validation error 2.40%, within 0.5 points of 1 worker's 2.00%.")
    assert main(["study", "show", folder]) == 0 and "recommendation: 8 workers" in capsys.readouterr().out
    assert main(["study", "show", digits, "--study", "other"]) == 2
    assert "no study found" in capsys.readouterr().out


def test_each_point_trains_on_its_own_processes_and_devices(digits, tmp_path):
    job, _ = _job(digits, [StudyPoint(1, "none"), StudyPoint(4, "linear", simulated=True)], [], str(tmp_path / "s"))
    one, four = job.study.points
    assert (point_request(job, one, 0).workers, point_request(job, one, 0).simulate_workers) == (1, 0)
    assert (point_request(job, four, 0).workers, point_request(job, four, 0).simulate_workers) == (1, 4)
    job.gpus = 8
    assert point_request(job, four, 1).cuda_devices == "1"  # simulated: one GPU a slot
    job.simulate = False
    real = point_request(job, four, 1)
    assert (real.workers, real.simulate_workers, real.cuda_devices) == (4, 0, "4,5,6,7")
    assert point_request(job, one, 1).cuda_devices == "4"


def test_a_rerun_trains_only_the_points_it_asks_for(digits, tmp_path):
    points = [StudyPoint(1, "none", state="complete", validation_error=0.5), StudyPoint(2, "none", state="running"),
              StudyPoint(4, "none", state="queued"), StudyPoint(8, "none", state="stopped")]
    calls: list = []
    job, runner = _job(digits, points, calls, str(tmp_path / "study"))
    job.asked = {"w1-none-warmup0", "w8-none-warmup0"}
    assert run_study(job, say=lambda text: None, runner=runner) == ExitCode.OK
    assert [c[0] for c in calls] == ["w8-none-warmup0"]
    assert [p.state for p in read_study(job.folder).points] == ["complete", "stopped", "queued", "complete"]


def test_a_recorded_point_not_complete_takes_how_it_trains_now():
    study = BatchStudy(name="s", project="p", per_worker_batch=32, points=[
        StudyPoint(2, "linear", logical_batch=64, simulated=True, state="stopped"),
        StudyPoint(4, "linear", logical_batch=128, simulated=True, state="complete", validation_error=0.1)])
    merge(study, [StudyPoint(2, "linear", logical_batch=64, simulated=False),
                  StudyPoint(4, "linear", logical_batch=128, simulated=False), StudyPoint(1, "linear")])
    assert [(p.key, p.simulated, p.state) for p in study.points] == [
        ("w1-linear-warmup0", False, "queued"), ("w2-linear-warmup0", False, "stopped"),
        ("w4-linear-warmup0", True, "complete")]
