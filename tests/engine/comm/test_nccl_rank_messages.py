"""What a GPU run's ranks say (issue 27 items 5 and 6), on the worker's real GPU code path on the CPU.

``tests/mpi_scripts/gpu_path_check.py`` runs ``run_worker`` under ``mpiexec -n 2`` believing it has a GPU,
with the recording NCCL stand-in. The rank log must name the communicator that carries the gradients
(the NCCL one, which replaces set-up's CPU communicator), and ``multi_gpu.allreduce_precision: half``,
which only the CPU all-reduce implements, must be refused aloud instead of silently dropped.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.launch import launcher as launch
from nnconsole.engine.launch.launcher import LaunchRequest, prepare_run
from nnconsole.engine.plan.explain import GPU_HALF_ALLREDUCE_MESSAGE
from nnconsole.engine.rundir import store as runs
from tests.support.paths import MPI_SCRIPTS, ROOT
from tests.support.projects import tabular_project


@pytest.mark.mpi
def test_gpu_ranks_name_nccl_and_refuse_half_messages(tmp_path):
    path = tabular_project(str(tmp_path / "p"), n=64, batch=4, epochs=1, workers=2, scaling="none")
    project = load_valid_project(path)
    project.multi_gpu.allreduce_precision = "half"
    run_dir = prepare_run(project, LaunchRequest(project_path=path, output=str(tmp_path / "out")), 2)
    cmd = [launch.find_mpiexec(), "-n", "2", "--oversubscribe", sys.executable,
           os.path.join(MPI_SCRIPTS, "gpu_path_check.py"), run_dir, "gpu", "float", "0"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=launch.mpi_environment(), cwd=ROOT)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    for rank in (0, 1):
        log = open(os.path.join(run_dir, "logs", f"rank{rank}.log")).read()
        assert "communicator nccl-gpu" in log, log
        assert "communicator mpi-cpu" not in log, log  # set-up's communicator is not the one that reduces
        assert GPU_HALF_ALLREDUCE_MESSAGE in log, log
    warnings = [w["message"] for w in runs.iter_metrics(run_dir, "warning")]
    assert warnings.count(GPU_HALF_ALLREDUCE_MESSAGE) == 1, warnings  # rank 0 writes it once
    assert json.loads([line for line in out.stdout.splitlines() if line.startswith("{")][-1])["ranks"]
