"""Communicator and launcher pieces: bucketed all-reduce under mpiexec, command lines, doctor."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from nnconsole.engine.launch import launcher as launch
from nnconsole.engine.comm.cpu import DEFAULT_BUCKET_MB
from nnconsole.engine.launch.launcher import LaunchError, worker_command
from tests.support.cli import nnconsole
from tests.support.paths import ROOT


@pytest.mark.mpi
@pytest.mark.parametrize("bucket_mb", [0.0001, DEFAULT_BUCKET_MB])
def test_bucketed_allreduce_averages_gradients(bucket_mb):
    cmd = [launch.find_mpiexec(), "-n", "2", "--oversubscribe", sys.executable,
           os.path.join(ROOT, "tests", "mpi_scripts", "allreduce_check.py"), str(bucket_mb)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=launch.mpi_environment(),
                         cwd=ROOT)
    assert out.returncode == 0, out.stderr
    result = json.loads([line for line in out.stdout.splitlines() if line.startswith("{")][-1])
    assert result["ok"] and result["size"] == 2, result["checks"]
    # A tiny bucket splits the 6 parameters into several buckets; the default fuses them into one.
    assert (result["buckets"] > 1) if bucket_mb < 0.001 else (result["buckets"] == 1)


def test_single_worker_runs_without_mpiexec():
    cmd = worker_command("/tmp/run", 1)
    assert cmd[0] == sys.executable and cmd[-2:] == ["nnconsole.engine.train.worker", "/tmp/run"]
    assert "-m" not in cmd  # -m would import from the working folder (tests/test_security_launch.py)


def test_mpiexec_command_for_more_workers_than_cores(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    cmd = worker_command("/tmp/run", 4, oversubscribe=True)  # the user's --oversubscribe (test_security_launch)
    assert cmd[0].endswith("mpiexec") and cmd[1:3] == ["-n", "4"]
    assert "--oversubscribe" in cmd and cmd[-1] == "/tmp/run"
    assert "--oversubscribe" not in worker_command("/tmp/run", 2)


def test_hosts_and_extra_arguments_pass_through(tmp_path):
    cmd = worker_command("/tmp/run", 4, hosts=["a:2", "b:2"], extra=["--mca", "btl", "tcp,self"])
    assert cmd[cmd.index("--host") + 1] == "a:2,b:2"
    assert cmd[cmd.index("--mca"):cmd.index("--mca") + 3] == ["--mca", "btl", "tcp,self"]
    with pytest.raises(LaunchError, match="hostfile not found"):
        worker_command("/tmp/run", 2, hostfile=str(tmp_path / "missing"))


def test_slurm_allocation_selects_srun(monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    monkeypatch.setattr(launch.shutil, "which", lambda name: "/usr/bin/srun" if name == "srun" else None)
    assert launch.choose_launcher("auto") == "srun"
    assert launch.choose_launcher("mpiexec") == "mpiexec"
    cmd = worker_command("/tmp/run", 8, "srun")
    assert cmd[:3] == ["srun", "-n", "8"] and "--kill-on-bad-exit=1" in cmd
    monkeypatch.delenv("SLURM_JOB_ID")
    assert launch.choose_launcher("auto") == "mpiexec"


def test_root_runs_get_open_mpi_permission(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    env = launch.mpi_environment()
    assert env["OMPI_ALLOW_RUN_AS_ROOT"] == "1" and env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] == "1"


@pytest.mark.mpi
def test_doctor_passes_on_this_machine_with_a_real_allreduce():
    out = nnconsole(["doctor", "--gpus", "2"], timeout=180)
    assert "[ OK ] all-reduce smoke test (2 processes)" in out.stdout
    assert "GB/s" in out.stdout
    assert "[SKIP] nnabla-ext-cuda" in out.stdout or "[ OK ] nnabla-ext-cuda" in out.stdout
    assert "all checks passed" in out.stdout


def test_doctor_explains_an_unreachable_host():
    from nnconsole.engine.doctor.checks import _hosts

    # 127.0.0.2 is this machine's loopback range with no ssh server: the connection is refused.
    [check] = _hosts(["127.0.0.2"])
    assert check.status == "fail" and "ssh-copy-id 127.0.0.2" in check.fix


@pytest.mark.slow
def test_doctor_skips_the_smoke_test_when_a_host_fails():
    from nnconsole.engine.doctor.checks import run_doctor

    lines = []
    assert run_doctor(workers=2, hosts=["127.0.0.2"], out=lines.append) == 1
    assert any(line.startswith("[FAIL] ssh 127.0.0.2") for line in lines)
    assert any(line.startswith("[SKIP] all-reduce smoke test") for line in lines)


def test_gpu_request_without_cuda_fails_loudly():
    from nnconsole.engine.backend.device import DeviceError, cuda_diagnosis, select_device

    if cuda_diagnosis() is None:
        pytest.skip("this machine has a usable GPU")
    with pytest.raises(DeviceError, match="nnconsole\\[cuda\\]"):
        select_device("cuda")
