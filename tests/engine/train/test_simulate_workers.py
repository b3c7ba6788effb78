"""``nnconsole train --simulate-workers N`` (issue 30): one process trains exactly as N workers would.

The ``mpi`` tests compare a simulated run with a real ``mpiexec -n N`` CPU run of the same project (the
digits template cut to a few iterations, a BatchNormalization + Dropout project, the gan_2d template with
two optimizers): the parameters, BatchNormalization's running statistics included, agree within 1e-5. The
others check what the run directory, the plan and the rank log say, and that a resume keeps the simulation.
"""
from __future__ import annotations

import json
import os
import signal

import numpy as np
import pytest

from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.project.io import save_project
from nnconsole.engine.project.model import Layer
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.test_seams import seam_environment
from tests.support.cli import PAUSE_AT, nnconsole, run_dir_from, start_paused_training, wait_for_pause
from tests.support.projects import bn_project, digits_subset_project as digits_project, gan_2d_project, tabular_project
from tests.support.training import final_params, max_relative_error

TOLERANCE = 1e-5
pytestmark = pytest.mark.slow  # each trains for seconds (real mpiexec runs, CLI subprocesses)


def _train(project: str, *extra: str) -> str:
    return run_dir_from(nnconsole(["train", project, "-q", *extra], timeout=120).stdout)


def _max_abs_difference(a: dict, b: dict) -> float:
    assert sorted(a) == sorted(b)
    return max(float(np.max(np.abs(a[k] - b[k]))) for k in a)


def _compare(real_run: str, simulated_run: str) -> tuple:
    """(max relative, max absolute) parameter difference; prints both for the report. The relative figure
    leaves out parameters that stay at rounding noise (below 1e-3: a bias before BatchNormalization, whose
    gradient is 0, ends near 1e-8, where any difference in the last bits is a large fraction of it)."""
    real, simulated = final_params(real_run), final_params(simulated_run)
    sizable = [k for k in real if np.max(np.abs(real[k])) >= 1e-3]
    rel = max_relative_error({k: real[k] for k in sizable}, {k: simulated[k] for k in sizable})
    absolute = _max_abs_difference(real, simulated)
    print(f"max parameter difference: relative {rel:.3g}, absolute {absolute:.3g}")
    return rel, absolute


def _real_workers(project: str, workers: int) -> str:
    return _train(project, "--gpus", str(workers), "--oversubscribe")


def bn_dropout_project(folder: str) -> str:
    """bn_project (BatchNormalization with a fast-moving running average) with Dropout after the activation:
    both depend on which rows each worker sees and on the worker's rank."""
    path = bn_project(folder, decay_rate=0.5, n=64, batch=8, epochs=2, solver="Momentum", lr=0.05)
    project = load_valid_project(path)
    layers = project.network.layers
    index = next(i for i, layer in enumerate(layers) if layer.name == "fc2")
    layers.insert(index, Layer("drop", "Dropout", ["act1"], {"p": 0.3}))
    layers[index + 1].inputs = ["drop"]
    save_project(project, path, backup=False)
    return path


@pytest.mark.mpi
@pytest.mark.parametrize("workers", [2, 4])
def test_simulated_digits_equal_real_workers(tmp_path, workers):
    project = digits_project(str(tmp_path / "digits"))
    rel, absolute = _compare(_real_workers(project, workers), _train(project, "--simulate-workers", str(workers)))
    assert rel <= TOLERANCE and absolute <= TOLERANCE


@pytest.mark.mpi
@pytest.mark.parametrize("workers", [2, 4])
def test_simulated_batchnorm_and_dropout_equal_real_workers(tmp_path, workers):
    project = bn_dropout_project(str(tmp_path / "bn"))
    real, simulated = _real_workers(project, workers), _train(project, "--simulate-workers", str(workers))
    rel, absolute = _compare(real, simulated)
    assert rel <= TOLERANCE and absolute <= TOLERANCE
    means = [name for name in final_params(real) if name.endswith("/mean")]
    assert means  # the running statistics are among the compared parameters
    # one worker's running statistics (no averaging over the simulated workers) would differ from them
    single = final_params(_train(project))
    assert max(float(np.max(np.abs(single[m] - final_params(real)[m]))) for m in means) > 1e-3
    if workers == 4:  # the same 4 real workers, simulated 2 in each of 2 processes (one real run for both claims)
        result = nnconsole(["train", project, "-q", "--gpus", "2", "--simulate-workers", "4"], timeout=120)
        on_two = run_dir_from(result.stdout)
        assert json.load(open(os.path.join(on_two, "launch.json")))["workers"] == 2
        notes = " ".join(json.load(open(os.path.join(on_two, "plan.json")))["notes"])
        assert "2 in each of the 2 worker processes" in notes
        assert os.path.exists(os.path.join(on_two, "logs", "rank1.log"))
        rel, absolute = _compare(real, on_two)
        assert rel <= TOLERANCE and absolute <= TOLERANCE


@pytest.mark.mpi
@pytest.mark.parametrize("workers", [2, 4])
def test_simulated_gan_with_two_optimizers_equals_real_workers(tmp_path, workers):
    project = gan_2d_project(str(tmp_path / "gan"), 8, 1)
    real, simulated = _real_workers(project, workers), _train(project, "--simulate-workers", str(workers))
    rel, absolute = _compare(real, simulated)
    assert rel <= TOLERANCE and absolute <= TOLERANCE
    losses = [[(r["optimizer"], r["iteration"], r["loss"]) for r in runs.iter_metrics(run, "optimizer_loss")]
              for run in (real, simulated)]
    assert losses[0] and [r[:2] for r in losses[0]] == [r[:2] for r in losses[1]]
    assert np.allclose([r[2] for r in losses[0]], [r[2] for r in losses[1]], rtol=1e-5, atol=1e-6)


def test_a_simulated_run_says_so_and_plans_as_n_workers(tmp_path):
    project = bn_dropout_project(str(tmp_path / "bn"))
    result = nnconsole(["train", project, "--simulate-workers", "4"], timeout=120)
    run_dir = run_dir_from(result.stdout)
    assert "plan: 4 worker(s), batch 8 per worker, logical batch 32" in result.stdout
    assert "simulated: 4 workers" in result.stdout
    launch = json.load(open(os.path.join(run_dir, "launch.json")))
    assert launch["simulate_workers"] == 4 and launch["workers"] == 1  # one process
    plan = json.load(open(os.path.join(run_dir, "plan.json")))
    assert plan["simulated"] is True and plan["workers"] == 4 and plan["logical_batch"] == 32
    assert any(note.startswith("simulated: 4 workers") for note in plan["notes"])
    assert runs.read_plan(run_dir).simulated
    log = open(os.path.join(run_dir, "logs", "rank0.log")).read()
    assert "rank 0 of 4" in log and "simulated (4 workers in one process)" in log
    assert not os.path.exists(os.path.join(run_dir, "logs", "rank1.log"))
    # every training row once per epoch, over the simulated workers together
    coverage = [r for r in runs.iter_metrics(run_dir, "validation")]
    assert coverage and all(r["samples_min_count"] == r["samples_max_count"] == 1 for r in coverage)


def test_a_worker_count_that_does_not_divide_among_the_processes_is_refused(tmp_path):
    project = bn_dropout_project(str(tmp_path / "bn"))
    result = nnconsole(["train", project, "-q", "--simulate-workers", "3", "--gpus", "2"], check=False)
    assert result.returncode != 0 and "--simulate-workers 3 on 2 workers" in result.stderr
    assert "must be a multiple of 2" in result.stderr


def test_synchronized_batchnorm_is_refused_with_the_fix(tmp_path):
    project = bn_project(str(tmp_path / "sync"), sync=True, n=32, batch=8, epochs=1)
    result = nnconsole(["train", project, "-q", "--simulate-workers", "2"], check=False, timeout=120)
    assert result.returncode != 0
    assert "set sync_across_workers to false" in (result.stdout + result.stderr).lower()


def test_resume_and_replay_keep_the_simulation(tmp_path):
    # (no Dropout or BatchNormalization: a stop averages the workers' running statistics and a resume
    # re-seeds random layers, in real runs as in simulated ones, so only a plain network resumes bit-exact)
    kwargs = dict(n=64, batch=8, epochs=2, solver="Momentum", lr=0.05, monitor=2)
    reference = final_params(_train(tabular_project(str(tmp_path / "ref"), **kwargs), "--simulate-workers", "2"))

    stopped = tabular_project(str(tmp_path / "stop"), **kwargs)
    proc = start_paused_training(stopped, "--simulate-workers", "2")
    run_dir = wait_for_pause(proc, str(tmp_path / "stop" / "results" / "project"))
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 3, (stdout, stderr)
    assert runs.read_status(run_dir).iteration < 8  # 4 iterations an epoch of 64 rows, 2 epochs
    nnconsole(["train", "--resume", run_dir, "-q"], timeout=120, env=seam_environment(pause_at_iteration=PAUSE_AT + 1))
    assert json.load(open(os.path.join(run_dir, "launch.json")))["simulate_workers"] == 2
    assert json.load(open(os.path.join(run_dir, "plan.json")))["simulated"] is True
    assert runs.read_status(run_dir).status == "finished"
    assert max_relative_error(reference, final_params(run_dir)) <= TOLERANCE

    replayed = nnconsole(["replay", run_dir, "-q"], timeout=120, check=False)
    replay_dir = [line.split(" into ", 1)[1].strip() for line in replayed.stdout.splitlines()
                  if line.startswith("replaying ")][0]
    assert json.load(open(os.path.join(replay_dir, "launch.json")))["simulate_workers"] == 2
    assert max_relative_error(reference, final_params(replay_dir)) <= TOLERANCE


def test_the_project_setting_simulates_unless_the_command_line_asks_for_real_workers(tmp_path):
    path = bn_dropout_project(str(tmp_path / "bn"))
    project = load_valid_project(path)
    project.multi_gpu.simulate_workers = 2
    save_project(project, path, backup=False)
    run_dir = _train(path)
    assert json.load(open(os.path.join(run_dir, "launch.json")))["simulate_workers"] == 2
    assert json.load(open(os.path.join(run_dir, "plan.json")))["logical_batch"] == 16

    project.multi_gpu.simulate_workers, project.multi_gpu.workers = 3, 2  # 3 workers do not divide among 2
    save_project(project, path, backup=False)
    result = nnconsole(["train", path, "-q"], check=False)
    assert result.returncode != 0 and "multi_gpu.simulate_workers 3 on 2 workers" in result.stderr

    real_only = _train(path, "--gpus", "1")  # --gpus without --simulate-workers: real workers only
    assert json.load(open(os.path.join(real_only, "launch.json")))["simulate_workers"] == 0
