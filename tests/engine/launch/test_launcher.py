"""The launcher's command lines (nnconsole.engine.launch.launcher): one worker without mpiexec, mpiexec with
oversubscription only when asked, hosts and extra arguments, srun under Slurm, Open MPI's permission for root."""
from __future__ import annotations

import os
import sys

import pytest

from nnconsole.engine.launch import launcher as launch
from nnconsole.engine.launch.launcher import LaunchError, worker_command


def test_single_worker_runs_without_mpiexec():
    cmd = worker_command("/tmp/run", 1)
    assert cmd[0] == sys.executable and cmd[-2:] == ["nnconsole.engine.train.worker", "/tmp/run"]
    assert "-m" not in cmd  # -m would import from the working folder (tests/system/test_launch_security.py)


def test_mpiexec_command_for_more_workers_than_cores(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    # the user's --oversubscribe (tests/system/test_launch_security.py)
    cmd = worker_command("/tmp/run", 4, oversubscribe=True)
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
