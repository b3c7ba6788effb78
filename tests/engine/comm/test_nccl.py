"""The GPU data-parallel path without a GPU (issue 14 items 3, 4, 8): pack size arithmetic, one
all-reduce callback per all-reducing backward, and the measured all-reduce share.

The worker's real GPU code path (``run_worker`` -> ``NcclGpuComm`` -> ``Trainer.run``) runs under
``mpiexec -n 2`` on the CPU with ``tests/mpi_scripts/fake_nccl.py``, a recording stand-in with the API
shape and buffer arithmetic of nnabla-ext-cuda's communicator.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

import pytest

from nnconsole.engine.launch import launcher as launch
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.launch.launcher import LaunchRequest, prepare_run
from nnconsole.engine.test_seams import seam_environment
from tests.support.cli import nnconsole
from tests.support.paths import MPI_SCRIPTS, ROOT
from tests.support.projects import tabular_project
from tests.support.training import final_params, max_relative_error
from nnconsole.engine.check.project_file import load_valid_project

SCRIPT = os.path.join(MPI_SCRIPTS, "gpu_path_check.py")
DELAY = 0.08  # seconds of unhidden NCCL time per reduction in the fake (well above a loaded iteration)


def test_pack_size_leaves_nnabla_buffers_for_float_and_half():
    from nnconsole.engine.comm.nccl import NCCL_PACK_ELEMENTS, NNABLA_CUDA_PACK_POOL_BYTES, nccl_pack_buffers

    assert NNABLA_CUDA_PACK_POOL_BYTES == 40 * 1024 * 1024
    assert NCCL_PACK_ELEMENTS == 2 << 20 == 2097152  # nnabla's own cli/train.py value
    for element_bytes in (4, 2):  # float, half
        assert NCCL_PACK_ELEMENTS * element_bytes <= NNABLA_CUDA_PACK_POOL_BYTES
        assert nccl_pack_buffers(NCCL_PACK_ELEMENTS, element_bytes) == 40 * 2 ** 20 // element_bytes // (2 << 20)
        assert nccl_pack_buffers(NCCL_PACK_ELEMENTS, element_bytes) >= 1
    # The old 64 MB pack (16,777,216 floats) leaves nnabla no buffer at all: refused, not a crash.
    assert nccl_pack_buffers(64 * 1024 * 1024 // 4, 4) == 0
    with pytest.raises(ValueError, match="40 MiB"):
        from nnconsole.engine.comm.nccl import checked_pack_elements
        checked_pack_elements(64 * 1024 * 1024 // 4, 4)
    assert nccl_pack_buffers(10485760, 4) == 1 and nccl_pack_buffers(10485761, 4) == 0


def _run(tmp_path, name, mode, precision="float", delay=0.0, inject=None, update_interval=2, epochs=2):
    path = tabular_project(str(tmp_path / name), n=128, batch=4, epochs=epochs, lr=0.05, workers=2,
                           scaling="none", monitor=2)
    project = load_valid_project(path)
    project.optimizer.update_interval = update_interval
    run_dir = prepare_run(project, LaunchRequest(project_path=path, output=str(tmp_path / name / "out")), 2)
    cmd = [launch.find_mpiexec(), "-n", "2", "--oversubscribe", sys.executable, SCRIPT, run_dir, mode, precision,
           str(delay)] + ([inject] if inject else [])
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=launch.mpi_environment(), cwd=ROOT)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    result = json.loads([line for line in out.stdout.splitlines() if line.startswith("{")][-1])
    return run_dir, result["ranks"]


@pytest.fixture(scope="module")
def gpu_and_cpu_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gpu_path")
    return _run(tmp, "gpu", "gpu", delay=DELAY), _run(tmp, "cpu", "cpu")


@pytest.mark.mpi
def test_one_fresh_callback_per_all_reducing_backward(gpu_and_cpu_runs):
    (gpu_dir, ranks), (cpu_dir, _) = gpu_and_cpu_runs
    [last] = [r for r in runs.iter_metrics(gpu_dir, "train")][-1:]
    updates = last["iteration"] // 2  # update_interval 2: every other backward all-reduces
    assert updates >= 16
    for record in ranks:
        assert record["outcome"] == "finished"
        callbacks = record["callbacks"]
        # Every update's gradients were reduced once: by a callback (overlapped with backward) or,
        # on the few steps that measure the communication, by a plain all_reduce. Accumulation-only
        # backwards make no callback.
        assert len(callbacks) + record["all_reduce"] == updates, record
        assert len(callbacks) >= updates - 2
        assert all(c["distinct"] for c in callbacks), "a callback object was handed out twice"
        assert [c["object"] for c in callbacks] == list(range(len(callbacks)))
        assert {c["pack_size"] for c in callbacks} == {2 << 20}
        assert all(c["division"] and c["arrays"] == record["parameters"] for c in callbacks)
        assert record["unsynchronised"] == 0, "NCCL work was left pending into the next backward"
    [sync] = list(runs.iter_metrics(gpu_dir, "sync_check"))
    assert sync["identical"] is True
    # The GPU path trains exactly what the CPU path trains.
    assert max_relative_error(final_params(cpu_dir), final_params(gpu_dir)) <= 1e-5


@pytest.mark.mpi
def test_allreduce_share_is_measured_on_the_gpu_path(gpu_and_cpu_runs):
    (gpu_dir, _), _ = gpu_and_cpu_runs
    train = list(runs.iter_metrics(gpu_dir, "train"))
    shares = [r["allreduce_share"] for r in train]
    spans = [r["time_per_iter"] for r in train]
    # The fake's reductions cost DELAY per update (every other iteration): at least that share of the
    # time, whatever the backward itself took (the iterations here are a few ms without it).
    expected = statistics.median([DELAY / 2 / t for t in spans])
    assert statistics.median(shares) > 0.3, shares
    assert statistics.median(shares) >= 0.6 * min(expected, 1.0), (shares, expected)
    assert all(0.0 <= s <= 1.0 for s in shares)
    warnings = list(runs.iter_metrics(gpu_dir, "warning"))
    assert any("all-reduce takes" in w["message"] for w in warnings)


@pytest.mark.mpi
def test_ranks_that_choose_different_backends_all_fail_at_once_naming_each(tmp_path):
    # device: auto on this GPU-less machine puts every rank on the CPU; the test seam makes rank 1
    # report 'cuda', as a node with a working GPU stack would next to one whose stack is broken.
    path = tabular_project(str(tmp_path / "p"), n=64, batch=8, epochs=1, workers=2)
    with open(path) as fh:
        text = fh.read()
    assert "device: cpu" in text
    with open(path, "w") as fh:
        fh.write(text.replace("device: cpu", "device: auto"))
    started = time.monotonic()
    result = nnconsole(["train", path, "-q"], check=False, timeout=180,
                       env=seam_environment(report_backend="1=cuda"))
    assert result.returncode != 0
    assert time.monotonic() - started < 120  # failed, did not hang
    run_dir = os.path.join(os.path.dirname(path), "results", "project")
    [run] = os.listdir(run_dir)
    errors = [json.load(open(os.path.join(run_dir, run, "logs", name)))["message"]
              for name in os.listdir(os.path.join(run_dir, run, "logs")) if name.endswith(".error.json")]
    assert errors, result.stdout + result.stderr
    for message in errors:
        assert "different compute backends (1 on cpu, 1 on cuda)" in message
        assert "rank 0 on " in message and "rank 1 on " in message
        assert "fell back to the CPU: " in message  # rank 0's real reason, from the GPU check
        assert "report_backend test seam" in message
    # No training step ran: no metrics of training, no checkpoint.
    assert not any(runs.iter_metrics(os.path.join(run_dir, run), "train"))
    assert "different compute backends" in result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr  # a message to act on, not a crash


def test_backend_agreement_is_silent_when_all_agree_and_for_one_process():
    from nnconsole.engine.backend.agreement import agree_on_backend, mismatch_message
    from nnconsole.engine.comm.cpu import SingleComm

    agree_on_backend(SingleComm(), None, "auto")  # one process: nothing to agree on, no MPI
    text = mismatch_message([{"rank": 0, "host": "a", "backend": "cuda", "reason": "CUDA GPU 0 (float)"},
                             {"rank": 1, "host": "b", "backend": "cpu", "reason": "fell back to the CPU: no GPU"}])
    assert "rank 1 on b: cpu (fell back to the CPU: no GPU)" in text and "1 on cpu, 1 on cuda" in text


@pytest.mark.mpi
def test_without_accumulation_the_first_reducing_backward_is_a_timed_probe(tmp_path):
    # update_interval 1: no plain backward to compare with, so the first all-reducing backward runs
    # unoverlapped (plain backward, then nnabla's all_reduce, each timed); the rest use callbacks.
    from nnconsole.engine.comm.nccl import COMM_PROBE_INTERVAL

    run_dir, ranks = _run(tmp_path, "u1", "gpu", delay=DELAY, update_interval=1, epochs=1)
    updates = [r for r in runs.iter_metrics(run_dir, "train")][-1]["iteration"]
    assert updates < COMM_PROBE_INTERVAL
    for record in ranks:
        assert record["all_reduce"] == 1 and len(record["callbacks"]) == updates - 1, record
        assert record["unsynchronised"] == 0
    shares = [r["allreduce_share"] for r in runs.iter_metrics(run_dir, "train")]
    assert min(shares) > 0.0, shares  # the probe's window too
    [sync] = list(runs.iter_metrics(run_dir, "sync_check"))
    assert sync["identical"] is True
