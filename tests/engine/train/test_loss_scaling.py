"""Dynamic loss scaling for half precision (issue 14 item 5), on the CPU.

The class is tested with real nnabla solvers and injected non-finite gradients; the engine's update
step is tested by running the worker with a half-precision device choice around a CPU context
(computing in float: power-of-two scaling is then exact, so the run must equal a float run), and
under ``mpiexec -n 2`` with one rank's gradients made non-finite: both ranks must skip.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from nnconsole.engine.launch import launcher as launch
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.launch.launcher import LaunchRequest, prepare_run
from nnconsole.engine.train.loss_scaling import (GROWTH_INTERVAL, INITIAL_LOSS_SCALE, MAX_CONSECUTIVE_OVERFLOWS,
                                                 DynamicLossScaler)
from tests.support.paths import MPI_SCRIPTS, ROOT
from tests.support.projects import tabular_project
from tests.support.training import final_params, max_relative_error
from nnconsole.engine.check.project_file import load_valid_project


def _net(seed: int = 0):
    """A small MLP, its loss, an SGD solver over its parameters, and fixed data."""
    import nnabla as nn
    import nnabla.functions as F
    import nnabla.parametric_functions as PF
    import nnabla.solvers as S

    nn.clear_parameters()
    rng = np.random.RandomState(seed)
    x, t = nn.Variable((8, 5)), nn.Variable((8, 1))
    x.d, t.d = rng.randn(8, 5), rng.randint(0, 3, (8, 1))
    loss = F.mean(F.softmax_cross_entropy(PF.affine(F.tanh(PF.affine(x, 6, name="a")), 3, name="b"), t))
    solver = S.Sgd(0.1)
    solver.set_parameters(nn.get_parameters())
    return nn.get_parameters(), loss, solver


def _backward(loss, solver, grad: float) -> None:
    solver.zero_grad()
    loss.forward()
    loss.backward(grad)


def test_constants_follow_nnabla_and_scale_is_a_power_of_two():
    assert GROWTH_INTERVAL == 2000  # nnabla's DynamicLossScalingUpdater(N=2000)
    assert np.log2(INITIAL_LOSS_SCALE) == int(np.log2(INITIAL_LOSS_SCALE))
    with pytest.raises(ValueError):
        DynamicLossScaler(scale=0.0)
    with pytest.raises(ValueError):
        DynamicLossScaler(scale=float("inf"))


def test_unscaled_gradients_equal_the_float_ones():
    params, loss, solver = _net()
    _backward(loss, solver, 1.0)
    reference = {k: p.g.copy() for k, p in params.items()}
    scaler = DynamicLossScaler()
    _backward(loss, solver, scaler.scale)
    assert max(float(np.abs(p.g).max()) for p in params.values()) > 100  # really scaled
    assert scaler.unscale_or_skip([solver]) is True
    for k, p in params.items():
        np.testing.assert_allclose(p.g, reference[k], rtol=1e-6, atol=1e-9)
    assert scaler.scale == INITIAL_LOSS_SCALE and scaler.good_updates == 1 and scaler.skipped == 0


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_overflow_skips_the_update_and_halves_the_scale(bad):
    params, loss, solver = _net()
    before = {k: p.d.copy() for k, p in params.items()}
    scaler = DynamicLossScaler(scale=1024.0)
    _backward(loss, solver, scaler.scale)
    grad = params["b/affine/W"].g
    grad[1, 2] = bad
    params["b/affine/W"].g = grad
    if scaler.unscale_or_skip([solver]):
        solver.update()
    assert scaler.scale == 512.0 and scaler.skipped == 1 and scaler.good_updates == 0
    for k, p in params.items():
        np.testing.assert_array_equal(p.d, before[k])
    # The next, finite step updates with the halved scale.
    _backward(loss, solver, scaler.scale)
    assert scaler.unscale_or_skip([solver]) is True
    solver.update()
    assert any(not np.array_equal(p.d, before[k]) for k, p in params.items())


def test_scale_grows_after_the_interval_of_good_updates_and_an_overflow_resets_the_count():
    params, loss, solver = _net()
    scaler = DynamicLossScaler(scale=8.0, growth_interval=3)
    for _ in range(2):
        _backward(loss, solver, scaler.scale)
        assert scaler.unscale_or_skip([solver])
    assert scaler.scale == 8.0
    _backward(loss, solver, scaler.scale)
    params["a/affine/b"].g = np.full(params["a/affine/b"].shape, np.inf, dtype=np.float32)
    assert scaler.unscale_or_skip([solver]) is False and scaler.scale == 4.0
    for expected in (4.0, 4.0, 8.0, 8.0, 8.0, 16.0):  # three good updates in a row, then x2
        _backward(loss, solver, scaler.scale)
        assert scaler.unscale_or_skip([solver])
        assert scaler.scale == expected


def test_gradients_that_never_become_finite_stop_the_run_with_a_reason():
    from nnconsole.engine.errors import TrainingError

    params, loss, solver = _net()
    scaler = DynamicLossScaler()
    with pytest.raises(TrainingError, match="precision to 'float'"):
        for _ in range(MAX_CONSECUTIVE_OVERFLOWS):
            _backward(loss, solver, scaler.scale)
            params["a/affine/W"].g = np.full(params["a/affine/W"].shape, np.nan, dtype=np.float32)
            assert scaler.unscale_or_skip([solver]) is False


class _TwoRanks:
    """The ``any`` reduction of a communicator whose other rank reports ``other``."""

    size = 2

    def __init__(self, other: bool) -> None:
        self.other = other

    def any(self, flag: bool) -> bool:
        return bool(flag) or self.other


def test_an_overflow_on_another_rank_skips_here_too():
    params, loss, solver = _net()
    before = {k: p.d.copy() for k, p in params.items()}
    scaler = DynamicLossScaler(scale=64.0)
    _backward(loss, solver, scaler.scale)
    assert scaler.unscale_or_skip([solver], _TwoRanks(other=True)) is False
    assert scaler.scale == 32.0
    assert all(np.array_equal(p.d, before[k]) for k, p in params.items())


# ---- the engine's update step -----------------------------------------------------------------------
def _prepared_run(tmp_path, name, workers=1, epochs=2):
    path = tabular_project(str(tmp_path / name), n=64, batch=8, epochs=epochs, lr=0.1, workers=workers,
                           scaling="none", solver="Adam")
    project = load_valid_project(path)
    return prepare_run(project, LaunchRequest(project_path=path, output=str(tmp_path / name / "out")), workers)


def _cpu_choice(type_config: str):
    from nnabla.ext_utils import get_extension_context

    from nnconsole.engine.backend.device import DeviceChoice

    ctx = get_extension_context("cpu", type_config="float")
    return DeviceChoice("cpu", 0, type_config, ctx, f"test: CPU computing float, update step of {type_config}")


def test_half_update_step_trains_exactly_like_float(tmp_path):
    from nnconsole.engine.train.worker import run_worker

    float_run = _prepared_run(tmp_path, "float")
    half_run = _prepared_run(tmp_path, "half")
    assert run_worker(float_run, device_choice=_cpu_choice("float")) == "finished"
    assert run_worker(half_run, device_choice=_cpu_choice("half")) == "finished"
    assert max_relative_error(final_params(float_run), final_params(half_run)) <= 1e-6
    assert "loss scale" not in open(os.path.join(half_run, "logs", "rank0.log")).read()


def test_half_update_step_skips_an_overflowed_update(tmp_path):
    from nnconsole.engine.comm.cpu import SingleComm
    from nnconsole.engine.train.worker import run_worker

    class InjectingComm(SingleComm):
        """Makes the gradients of the 3rd backward non-finite; snapshots parameters around it."""

        def __init__(self) -> None:
            super().__init__()
            self.calls = 0
            self.snapshots: list = []

        def backward(self, loss, grad, params, reduce=False, average=True):
            self.calls += 1
            self.snapshots.append([np.array(p.d, copy=True) for p in params])
            super().backward(loss, grad, params, reduce)
            if self.calls == 3:
                params[0].g = np.full(params[0].shape, np.inf, dtype=np.float32)

    run_dir = _prepared_run(tmp_path, "inject", epochs=1)
    comm = InjectingComm()
    assert run_worker(run_dir, comm=comm, device_choice=_cpu_choice("half")) == "finished"
    shots = comm.snapshots
    changed = [any(not np.array_equal(a, b) for a, b in zip(shots[i], shots[i + 1])) for i in range(len(shots) - 1)]
    assert changed[:4] == [True, True, False, True]  # update 3 was skipped, the others were not
    log = open(os.path.join(run_dir, "logs", "rank0.log")).read()
    assert f"loss scale {INITIAL_LOSS_SCALE:g} -> {INITIAL_LOSS_SCALE / 2:g}" in log
    assert all(np.isfinite(v).all() for v in final_params(run_dir).values())


@pytest.mark.mpi
def test_ranks_agree_on_an_overflow_seen_by_one_rank(tmp_path):
    run_dir = _prepared_run(tmp_path, "two", workers=2, epochs=1)
    cmd = [launch.find_mpiexec(), "-n", "2", "--oversubscribe", sys.executable,
           os.path.join(MPI_SCRIPTS, "gpu_path_check.py"), run_dir, "cpu", "half", "0", "1:2"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=launch.mpi_environment(), cwd=ROOT)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    ranks = json.loads([line for line in out.stdout.splitlines() if line.startswith("{")][-1])["ranks"]
    assert [r["trace"]["after_injection"] for r in ranks] == [True, True]  # both skipped update 2
    for rank in (0, 1):
        log = open(os.path.join(run_dir, "logs", f"rank{rank}.log")).read()
        assert "overflowed at iteration 2; update skipped" in log
    [sync] = list(runs.iter_metrics(run_dir, "sync_check"))
    assert sync["identical"] is True
