"""BatchNormalization across workers: running statistics identical on every rank, synchronized BN,
and a run whose ranks end with different parameters reported as failed (issue 13, item 11)."""
from __future__ import annotations

import os
import signal

import numpy as np
import pytest

from nnconsole.engine.rundir import store as runs
from nnconsole.engine.project.model import Layer
from nnconsole.engine.rundir.protocol import record_problems
from nnconsole.engine.test_seams import seam_environment
from tests.support.cli import nnconsole, run_dir_from
from tests.support.training import final_params, train_file_in_process
from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.rundir.protocol import RESOLVED_FILE
from tests.support.projects import bn_project
from tests.support.paths import MPI_SCRIPTS


def train(project: str, *extra: str, env: dict | None = None, check: bool = True):
    out = nnconsole(["train", project, "-q", *extra], check=check, env=env)
    return run_dir_from(out.stdout), out


def validation_loss_of(run_dir: str, params_file: str) -> float:
    """Mean validation loss of ``params_file`` over the whole validation set, in this process."""
    import nnabla as nn

    from nnconsole.engine.runtime.graph import build_graph
    from nnconsole.engine.data.loading import load_dataset_split

    project = load_valid_project(os.path.join(run_dir, RESOLVED_FILE), check_datasets=False)
    dataset = load_dataset_split(project, "validation")
    nn.clear_parameters()
    graph = build_graph(project.network, dataset.size, "validation")
    nn.load_parameters(os.path.join(run_dir, params_file))
    for name, var in graph.inputs.items():
        var.d = dataset.arrays[name]
    graph.sample_loss.forward(clear_no_need_grad=True)
    loss = float(np.mean(graph.sample_loss.d))
    nn.clear_parameters()
    return loss


# ---- in one process: the synchronized layer is BatchNormalization ------------------------------
def _bn_pair(x_value: np.ndarray, axes, reduce_sum, seed: int = 0):
    """(output, input gradient, parameter gradients, running stats) of nnabla's BN and of ours."""
    import nnabla as nn
    import nnabla.functions as F
    import nnabla.parametric_functions as PF

    from nnconsole.engine.layers.sync_batchnorm import sync_batch_normalization

    results = []
    for which in ("nnabla", "sync"):
        nn.clear_parameters()
        x = nn.Variable.from_numpy_array(x_value, need_grad=True)
        with nn.parameter_scope("layer"):
            if which == "nnabla":
                y = PF.batch_normalization(x, axes=axes, decay_rate=0.8, eps=1e-3, batch_stat=True)
            else:
                y = sync_batch_normalization(x, axes=axes, decay_rate=0.8, eps=1e-3, reduce_sum=reduce_sum, workers=1)
        weights = np.random.RandomState(seed).randn(*x_value.shape).astype(np.float32)
        loss = F.sum(y * nn.Variable.from_numpy_array(weights) + y * y)
        x.grad.zero()
        params = nn.get_parameters(grad_only=False)
        for p in params.values():
            p.grad.zero()
        loss.forward()
        loss.backward()
        results.append({"y": y.d.copy(), "dx": x.g.copy(),
                        **{k: (v.d.copy(), v.g.copy()) for k, v in params.items()}})
    nn.clear_parameters()
    return results


@pytest.mark.parametrize("shape,axes", [((6, 5), [1]), ((4, 3, 5, 2), [1]), ((4, 3, 5), [1, 2])])
def test_synchronized_batchnorm_on_one_worker_equals_nnabla_batchnorm(shape, axes):
    x = (np.random.RandomState(1).randn(*shape) * 3 + 2).astype(np.float32)
    ours_calls = []

    def reduce_sum(a):
        ours_calls.append(a.shape)
        return a

    ref, ours = _bn_pair(x, axes, reduce_sum)
    assert ours_calls, "the synchronized layer never reduced anything"
    np.testing.assert_allclose(ours["y"], ref["y"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ours["dx"], ref["dx"], rtol=1e-3, atol=1e-4)
    for key in ("layer/bn/beta", "layer/bn/gamma"):
        np.testing.assert_allclose(ours[key][1], ref[key][1], rtol=1e-4, atol=1e-4)  # gradients
    # Running statistics: decay 0.8 from mean 0 / variance 1, the variance unbiased (as nnabla's layer
    # makes it for one axis; with several axes nnabla 1.39 never updates them, so numpy is the reference).
    reduce_axes = tuple(i for i in range(x.ndim) if i not in axes)
    count = int(np.prod([x.shape[i] for i in reduce_axes]))
    mean = x.astype(np.float64).mean(axis=reduce_axes, keepdims=True)
    var = x.astype(np.float64).var(axis=reduce_axes, keepdims=True) * count / (count - 1)
    np.testing.assert_allclose(ours["layer/bn/mean"][0], 0.2 * mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours["layer/bn/var"][0], 0.8 + 0.2 * var, rtol=1e-5, atol=1e-6)
    if len(axes) == 1:
        for key in ("layer/bn/mean", "layer/bn/var"):
            np.testing.assert_allclose(ours[key][0], ref[key][0], rtol=1e-5, atol=1e-6)


# ---- under mpiexec -n 2 ---------------------------------------------------------------------------
@pytest.mark.mpi
def test_running_statistics_are_identical_on_every_rank_and_validation_uses_them(tmp_path):
    project = bn_project(str(tmp_path / "p"), n=64, batch=8, epochs=2, lr=0.1, workers=2, scaling="none")
    run_dir, _ = train(project)
    [sync] = list(runs.iter_metrics(run_dir, "sync_check"))
    assert sync["workers"] == 2 and sync["identical"] is True, sync
    assert runs.read_status(run_dir).status == "finished"
    # The reported validation loss is the mean over both ranks' shares; it equals one process
    # evaluating the saved parameters only when both ranks used the saved (averaged) statistics.
    last = list(runs.iter_metrics(run_dir, "validation"))[-1]
    assert last["loss"] == pytest.approx(validation_loss_of(run_dir, "parameters_final.h5"), rel=1e-5)


@pytest.mark.mpi
def test_synchronized_batchnorm_two_workers_match_one_worker_with_the_same_logical_batch(tmp_path):
    kwargs = dict(n=64, epochs=3, lr=0.2, scaling="none")
    reference = final_params(train_file_in_process(bn_project(str(tmp_path / "one"), sync=True, batch=16, **kwargs)))
    synced, _ = train(bn_project(str(tmp_path / "two"), sync=True, batch=8, workers=2, **kwargs))
    assert list(runs.iter_metrics(synced, "sync_check"))[0]["identical"] is True
    assert largest_difference(reference, final_params(synced)) <= 1e-5  # measured: 3e-7 to 7e-7
    # The check discriminates: per-worker statistics over 8 samples train to other weights.
    plain, _ = train(bn_project(str(tmp_path / "plain"), sync=False, batch=8, workers=2, **kwargs))
    assert largest_difference(reference, final_params(plain)) > 1e-2


@pytest.mark.mpi
def test_a_stop_checkpoint_holds_averaged_statistics_so_resume_gives_the_uninterrupted_result(tmp_path):
    # Running statistics are exponential averages, linear in the batch statistics: averaging them over
    # the ranks at a stop and going on gives the uninterrupted run's values. A stop checkpoint with
    # rank 0's statistics alone would make every rank resume from those and end elsewhere (decay 0.999
    # keeps that difference from being forgotten by the end of the run).
    from tests.support.cli import PAUSE_AT, start_paused_training, wait_for_pause

    # The run pauses at PAUSE_AT (test seam) until the stop comes: mid-epoch, 9 of its 16 updates still to go.
    kwargs = dict(n=64, batch=8, epochs=4, solver="Momentum", lr=0.05, workers=2, monitor=2, decay_rate=0.999)
    reference = final_params(train(bn_project(str(tmp_path / "ref"), **kwargs))[0])
    proc = start_paused_training(bn_project(str(tmp_path / "stop"), **kwargs))
    run_dir = wait_for_pause(proc, str(tmp_path / "stop" / "results" / "project"))
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 3 and runs.read_status(run_dir).iteration == PAUSE_AT + 1, (stdout, stderr)
    nnconsole(["train", "--resume", run_dir, "-q", "--gpus", "2"])
    assert runs.read_status(run_dir).status == "finished"
    assert largest_difference(reference, final_params(run_dir)) <= 1e-5


def _gpu_path_run(tmp_path, name: str, mode: str, sync: bool) -> tuple:
    """A 2-worker BatchNormalization run through the worker's GPU code path (NcclGpuComm) on the CPU,
    with the recording NCCL stand-in of tests/mpi_scripts (mode 'gpu'), or the CPU path (mode 'cpu')."""
    import subprocess
    import sys

    from nnconsole.engine.launch import launcher as launch
    from nnconsole.engine.launch.launcher import LaunchRequest, prepare_run
    from tests.support.paths import ROOT

    path = bn_project(str(tmp_path / name), sync=sync, n=64, batch=8, epochs=2, lr=0.1, workers=2, scaling="none")
    project = load_valid_project(path)
    run_dir = prepare_run(project, LaunchRequest(project_path=path, output=str(tmp_path / name / "out")), 2)
    script = os.path.join(MPI_SCRIPTS, "gpu_path_check.py")
    out = subprocess.run([launch.find_mpiexec(), "-n", "2", "--oversubscribe", sys.executable, script, run_dir, mode,
                          "float"], capture_output=True, text=True, timeout=240, env=launch.mpi_environment(), cwd=ROOT)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return run_dir, out.stdout


@pytest.mark.mpi
def test_the_gpu_path_averages_statistics_through_nccl_and_synchronizes_batchnorm(tmp_path):
    import json

    gpu_dir, stdout = _gpu_path_run(tmp_path, "gpu", "gpu", sync=True)
    cpu_dir, _ = _gpu_path_run(tmp_path, "cpu", "cpu", sync=True)
    for run_dir in (gpu_dir, cpu_dir):
        [check] = list(runs.iter_metrics(run_dir, "sync_check"))
        assert check["identical"] is True, check
    # Through the (stand-in) NCCL communicator: 8 gradient reductions (4 updates x 2 epochs, in backward
    # callbacks or plain all_reduce) and 5 averages of the running statistics (before each validation,
    # at each epoch's checkpoint, and before the final export).
    for record in json.loads([line for line in stdout.splitlines() if line.startswith("{")][-1])["ranks"]:
        assert len(record["callbacks"]) + record["all_reduce"] == 8 + 5, record
    assert largest_difference(final_params(cpu_dir), final_params(gpu_dir)) <= 1e-5

def largest_difference(a: dict, b: dict) -> float:
    """The largest parameter difference relative to the parameter's magnitude, floored at 0.01: fc1's
    bias feeds BatchNormalization, so its gradient is 0 and its value rounding noise (about 1e-9)."""
    assert sorted(a) == sorted(b)
    return max(float(np.max(np.abs(a[k] - b[k])) / max(float(np.max(np.abs(a[k]))), 1e-2)) for k in a)


@pytest.mark.mpi
def test_ranks_that_end_with_different_parameters_fail_the_run(tmp_path):
    project = bn_project(str(tmp_path / "p"), n=32, batch=8, epochs=1, workers=2)
    run_dir, out = train(project, env=seam_environment(diverge_rank=1), check=False)
    assert out.returncode == 1, (out.stdout, out.stderr)
    status = runs.read_status(run_dir)
    assert status.status == "failed"
    assert "differ between ranks" in status.message and "max abs difference" in status.message
    assert "bn1/bn/beta" in status.message  # the learned parameter the test seam changes
    assert "differ between ranks" in out.stderr
    assert not os.path.exists(os.path.join(run_dir, "model_final.nnp"))
    [sync] = list(runs.iter_metrics(run_dir, "sync_check"))
    assert sync["identical"] is False and sync["differing"] and not record_problems(sync)


# ---- the plan offers and explains synchronized BatchNormalization ----------------------------------
def test_plan_offers_synchronized_batchnorm_for_small_per_worker_batches():
    from nnconsole.engine.plan.worker_plan import make_plan
    from tests.support.projects import plan_project

    def plan(sync: bool, workers: int, batch: int = 32):
        project = plan_project(batch=batch, bn=True)
        if sync:
            project.network.layer("bn").params["sync_across_workers"] = True
        return make_plan(project, workers=workers, policy="keep-logical-batch")

    [warning] = [w for w in plan(False, 4).warnings if w.code == "small-batch-batchnorm"]
    assert "sync_across_workers" in warning.fix  # the remedy is named where the problem is reported
    synced = plan(True, 4)  # 4 workers x 8 samples: statistics over 32
    assert "small-batch-batchnorm" not in [w.code for w in synced.warnings]
    assert any("bn" in note and "32 samples" in note and "synchroniz" in note for note in synced.notes)
    # One worker has nothing to synchronize with: a small batch is still reported, without that remedy.
    [alone] = [w for w in plan(True, 1, batch=8).warnings if w.code == "small-batch-batchnorm"]
    assert "sync_across_workers" not in alone.fix


# ---- nnabla 1.39 leaves running statistics alone when BatchNormalization keeps several axes --------
def test_batchnorm_over_several_axes_updates_its_running_statistics():
    import nnabla as nn

    from nnconsole.engine.runtime.graph import build_graph
    from nnconsole.engine.project.model import Network

    network = Network([
        Layer("x", "Input", params={"shape": [3, 4, 5]}),
        Layer("bn", "BatchNormalization", ["x"], {"axes": [0, 1], "decay_rate": 0.5}),
        Layer("fc", "Affine", ["bn"], {"out_shape": 3}),
        Layer("y", "Input", params={"shape": [1]}),
        Layer("loss", "SoftmaxCrossEntropy", ["fc", "y"]),
    ])
    nn.clear_parameters()
    graph = build_graph(network, 6, "train")
    x = (np.random.RandomState(2).randn(6, 3, 4, 5) * 2 + 3).astype(np.float32)
    graph.inputs["x"].d = x
    graph.inputs["y"].d = np.zeros((6, 1), dtype=np.float32)
    graph.loss.forward()
    params = nn.get_parameters(grad_only=False)
    count = 6 * 5
    mean = x.astype(np.float64).mean(axis=(0, 3), keepdims=True)
    var = x.astype(np.float64).var(axis=(0, 3), keepdims=True) * count / (count - 1)
    np.testing.assert_allclose(params["bn/bn/mean"].d, 0.5 * mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(params["bn/bn/var"].d, 0.5 + 0.5 * var, rtol=1e-5, atol=1e-6)
    nn.clear_parameters()
