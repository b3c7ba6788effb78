"""The CPU communicator (nnconsole.engine.comm.cpu): bucketed all-reduce of gradients under a real mpiexec."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from nnconsole.engine.comm.cpu import DEFAULT_BUCKET_MB
from nnconsole.engine.launch import launcher as launch
from tests.support.paths import MPI_SCRIPTS, ROOT


@pytest.mark.mpi
@pytest.mark.parametrize("bucket_mb", [0.0001, DEFAULT_BUCKET_MB])
def test_bucketed_allreduce_averages_gradients(bucket_mb):
    cmd = [launch.find_mpiexec(), "-n", "2", "--oversubscribe", sys.executable,
           os.path.join(MPI_SCRIPTS, "allreduce_check.py"), str(bucket_mb)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=launch.mpi_environment(),
                         cwd=ROOT)
    assert out.returncode == 0, out.stderr
    result = json.loads([line for line in out.stdout.splitlines() if line.startswith("{")][-1])
    assert result["ok"] and result["size"] == 2, result["checks"]
    # A tiny bucket splits the 6 parameters into several buckets; the default fuses them into one.
    assert (result["buckets"] > 1) if bucket_mb < 0.001 else (result["buckets"] == 1)
