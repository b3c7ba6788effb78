"""N workers under a real ``mpiexec -n 2``: equivalence with one worker, sync, coverage, faults, stop/resume."""
from __future__ import annotations

import json
import os
import signal
import time

import pytest

from nnconsole.engine.launch import launcher as launch
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.protocol import record_problems
from nnconsole.engine.test_seams import seam_environment
from tests.support.cli import PAUSE_AT, nnconsole, run_dir_from, start_paused_training, wait_for_pause
from tests.support.processes import live_processes
from tests.support.projects import tabular_project
from tests.support.training import final_params, max_relative_error, train_file_in_process

pytestmark = pytest.mark.mpi


def train(project: str, *extra: str) -> str:
    return run_dir_from(nnconsole(["train", project, "-q", *extra]).stdout)


def test_two_workers_match_one_worker_with_the_same_logical_batch(tmp_path):
    # 1 worker x batch 16 and 2 workers x batch 8 see the same 16 samples per update (same seeded
    # order); with the mean all-reduce their parameters must agree after 24 SGD updates.
    one = tabular_project(str(tmp_path / "one"), n=64, batch=16, epochs=6, lr=0.2, scaling="none")
    two = tabular_project(str(tmp_path / "two"), n=64, batch=8, epochs=6, lr=0.2, scaling="none", workers=2)
    reference = final_params(train_file_in_process(one))  # one worker: the worker's Trainer, in this process
    two_run = train(two)
    assert json.load(open(os.path.join(two_run, "plan.json")))["workers"] == 2
    assert max_relative_error(reference, final_params(two_run)) <= 1e-5

    # The check discriminates: summing instead of averaging doubles the step, which for SGD is the
    # same as doubling the learning rate; that run is far outside the tolerance.
    doubled = tabular_project(str(tmp_path / "doubled"), n=64, batch=16, epochs=6, lr=0.4, scaling="none")
    assert max_relative_error(reference, final_params(train_file_in_process(doubled))) > 1e-3


def test_parameters_identical_on_all_ranks_and_each_sample_once_per_epoch(tmp_path):
    project = tabular_project(str(tmp_path / "p"), n=64, batch=8, epochs=2, solver="Adam", lr=0.01, workers=2)
    run_dir = train(project)
    [sync] = list(runs.iter_metrics(run_dir, "sync_check"))
    assert sync["workers"] == 2 and sync["identical"] is True
    assert [p for r in runs.iter_metrics(run_dir) for p in record_problems(r)] == []  # as run_protocol declares
    for record in runs.iter_metrics(run_dir, "validation"):
        assert record["samples_min_count"] == 1 and record["samples_max_count"] == 1
    logs = sorted(os.listdir(os.path.join(run_dir, "logs")))
    assert "rank0.log" in logs and "rank1.log" in logs
    assert "rank 1 of 2" in open(os.path.join(run_dir, "logs", "rank1.log")).read()
    # Only rank 0 writes models and metrics: one sync record, one set of files.
    assert os.path.isfile(os.path.join(run_dir, "model_final.nnp"))


def test_validation_metrics_are_exact_across_workers(tmp_path):
    # 2 workers split the validation set unevenly (33 rows); reduced sums and counts must give the
    # same loss and error as one worker evaluating the same parameters.
    one = tabular_project(str(tmp_path / "one"), n=66, batch=11, epochs=1, lr=0.1, scaling="none")
    two = tabular_project(str(tmp_path / "two"), n=66, batch=11, epochs=1, lr=0.1, scaling="none", workers=2)
    # Same logical batch needs batch 11 x 2 = 22 for one worker.
    text = open(one).read().replace("batch_size: 11", "batch_size: 22")
    open(one, "w").write(text)
    v1 = list(runs.iter_metrics(train_file_in_process(one), "validation"))[-1]  # one worker, in-process
    v2 = list(runs.iter_metrics(train(two), "validation"))[-1]
    assert v1["count"] == v2["count"] == 33
    assert v2["loss"] == pytest.approx(v1["loss"], rel=1e-5)
    assert v2["error"] == pytest.approx(v1["error"], abs=1e-9)


def test_a_failing_worker_ends_the_job_quickly_and_is_named(tmp_path):
    project = tabular_project(str(tmp_path / "p"), n=4096, batch=8, epochs=50, workers=2)
    start = time.monotonic()
    out = nnconsole(["train", project], check=False, timeout=120, env=seam_environment(fail_at_iteration=5, fail_rank=1))
    ended = time.time()
    assert out.returncode == 1
    assert "rank 1 failed" in out.stderr and "deliberate failure" in out.stderr
    assert "Traceback" in out.stderr
    run_dir = run_dir_from(out.stdout)
    error_file = os.path.join(run_dir, "logs", "rank1.error.json")
    assert ended - os.path.getmtime(error_file) < 10.0
    status = runs.read_status(run_dir)
    assert status.status == "failed" and status.failed_rank == 1
    assert time.monotonic() - start < 60
    assert not _stray_workers(run_dir)


def _stray_workers(run_dir: str) -> list:
    return [p for p in live_processes(run_dir) if "nnconsole.engine.train.worker" in p[1]]


@pytest.mark.parametrize("workers,resume_workers", [(1, 1), (2, 2)])
def test_stop_then_resume_gives_the_uninterrupted_result(tmp_path, workers, resume_workers):
    kwargs = dict(n=64, batch=8, epochs=4, solver="Momentum", lr=0.05, workers=workers, monitor=2)
    ref = tabular_project(str(tmp_path / "ref"), **kwargs)
    reference = final_params(train_file_in_process(ref) if workers == 1 else train(ref))  # 1: in-process

    project = tabular_project(str(tmp_path / "stop"), **kwargs)
    proc = start_paused_training(project)
    run_dir = wait_for_pause(proc, str(tmp_path / "stop" / "results" / "project"))
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 3, (stdout, stderr)
    status = runs.read_status(run_dir)
    assert status.status == "stopped" and status.resumable
    assert status.iteration == PAUSE_AT + 1  # mid-run and mid-epoch: the next update boundary after the pause
    assert runs.list_checkpoints(run_dir)
    assert "--resume" in stdout
    if workers > 1:  # mpiexec's report of exit status 3 is followed by what it means
        assert launch.STOPPED_NOTE in open(os.path.join(run_dir, "logs", "launcher.log")).read()

    # A resume that restarts exactly at the seam's iteration goes on at once (a pause would wait 60 s).
    nnconsole(["train", "--resume", run_dir, "-q", "--gpus", str(resume_workers)], timeout=40,
              env=seam_environment(pause_at_iteration=PAUSE_AT + 1))
    assert runs.read_status(run_dir).status == "finished"
    assert max_relative_error(reference, final_params(run_dir)) <= 1e-6


def test_resume_with_another_worker_count_recomputes_the_plan(tmp_path):
    project = tabular_project(str(tmp_path / "p"), n=64, batch=8, epochs=3, workers=1, monitor=2)
    proc = start_paused_training(project)
    run_dir = wait_for_pause(proc, str(tmp_path / "p" / "results" / "project"))
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    assert proc.returncode == 3 and runs.read_status(run_dir).iteration == PAUSE_AT + 1
    nnconsole(["train", "--resume", run_dir, "-q", "--gpus", "2"])
    plan = json.load(open(os.path.join(run_dir, "plan.json")))
    assert plan["workers"] == 2 and plan["logical_batch"] == 16
    assert runs.read_status(run_dir).status == "finished"
    assert [r["epoch"] for r in runs.iter_metrics(run_dir, "validation")][-1] == 3
