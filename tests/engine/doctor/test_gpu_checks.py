"""``nnconsole doctor`` tells the truth about an installed GPU stack (issue 14 item 7).

An installed nnabla-ext-cuda that does not load is a failure with its cause, never "CPU only" and
"all checks passed". The stand-in extension raises what the real one raises when a library is missing.
"""
from __future__ import annotations

import sys
import types

import pytest
from tests.support.paths import MPI_SCRIPTS


@pytest.fixture
def broken_extension(tmp_path, monkeypatch):
    """An installed nnabla_ext.cuda that fails to load as the wheel does without cuSOLVER."""
    package = tmp_path / "ext" / "nnabla_ext" / "cuda"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        "raise ImportError('libcusolver.so.11: cannot open shared object file: No such file or directory')\n")
    monkeypatch.syspath_prepend(str(tmp_path / "ext"))
    monkeypatch.delitem(sys.modules, "nnabla_ext.cuda", raising=False)
    monkeypatch.setenv("OMPI_HOME", "")  # recorded, so the libmpi check's OMPI_HOME is undone after the test
    monkeypatch.delenv("OMPI_HOME")
    from nnconsole.engine.doctor import checks as doctor

    # The MPI all-reduce smoke test is covered by tests/engine/doctor/test_checks.py; here it would only cost time.
    monkeypatch.setattr(doctor, "_smoke", lambda workers, hosts: doctor.Check("all-reduce smoke test", "ok", "stub"))
    return tmp_path


def _doctor(workers: int = 1):
    from nnconsole.engine.doctor.checks import run_doctor

    lines = []
    code = run_doctor(workers=workers, hosts=[], out=lines.append)
    return code, lines


def test_installed_extension_that_does_not_load_fails(broken_extension):
    code, lines = _doctor()
    cuda = [line for line in lines if "nnabla-ext-cuda and GPUs" in line]
    assert cuda and cuda[0].startswith("[FAIL]"), lines
    assert "all checks passed" not in lines and code == 1, lines


def test_missing_library_is_named_with_its_package(broken_extension, monkeypatch):
    """With a driver present, the failing library and the package that provides it are named."""
    from nnconsole.engine.backend import gpu_libs

    root = broken_extension / "site" / "nvidia"
    needs = gpu_libs.wheel_needs()
    for soname, entry in needs["libraries"].items():
        if soname != "libcusolver.so.11":
            (root / entry["folder"] / "lib").mkdir(parents=True, exist_ok=True)
            (root / entry["folder"] / "lib" / entry["file"]).write_bytes(b"")
    monkeypatch.setitem(sys.modules, "nvidia", types.SimpleNamespace(__path__=[str(root)]))
    import ctypes

    monkeypatch.setattr(ctypes, "CDLL", lambda path, mode=0: object())  # every present library "loads"
    monkeypatch.setattr(gpu_libs, "driver_problem", lambda: None)
    from nnconsole.engine.doctor import gpu_checks as doctor_gpu

    monkeypatch.setattr(doctor_gpu, "driver_version", lambda: 12040)
    gpu_libs.preload_wheel_libraries.cache_clear()
    try:
        code, lines = _doctor()
    finally:
        gpu_libs.preload_wheel_libraries.cache_clear()
    text = "\n".join(lines)
    assert "[FAIL] CUDA libraries of the 'cuda' extra" in text, text
    assert "libcusolver.so.11 not installed (from nvidia-cusolver-cu12)" in text, text
    failing = [line for line in lines if line.startswith("[FAIL] nnabla-ext-cuda and GPUs")]
    assert failing and "libcusolver.so.11" in failing[0], text
    assert code == 1


def test_no_driver_is_said_plainly(broken_extension, monkeypatch):
    from nnconsole.engine.backend import gpu_libs

    monkeypatch.setattr(gpu_libs, "DRIVER_LIBRARY", "libcuda-not-here.so.1")
    code, lines = _doctor()
    driver = [line for line in lines if "NVIDIA driver" in line]
    assert driver and driver[0].startswith("[FAIL] NVIDIA driver: no NVIDIA driver on this machine"), lines
    assert code == 1


def test_without_the_extension_the_gpu_checks_stay_quiet(monkeypatch):
    """No extension installed: CPU only, a SKIP, and no GPU failure (the machine is simply not a GPU one)."""
    from nnconsole.engine.doctor import checks as doctor
    from nnconsole.engine.backend import gpu_libs

    monkeypatch.setattr(gpu_libs, "extension_installed", lambda: False)
    monkeypatch.setattr(doctor, "_smoke", lambda workers, hosts: doctor.Check("all-reduce smoke test", "ok", "stub"))
    code, lines = _doctor()
    assert any(line.startswith("[SKIP] nnabla-ext-cuda and GPUs: CPU only") for line in lines), lines
    assert not any(line.startswith(("[FAIL]", "[ OK ] NVIDIA driver", "[ OK ] CUDA libraries")) for line in lines), \
        lines
    assert code == 0 and "all checks passed" in lines
    assert any(line.startswith("[SKIP] NCCL smoke test") for line in lines), lines


@pytest.mark.mpi
@pytest.mark.parametrize("broken", [False, True])
def test_nccl_smoke_worker_checks_all_reduce_and_callback_backward(broken):
    """The GPU smoke test's rank side, on CPU with a recording stand-in for nnabla's communicator."""
    import json
    import os
    import subprocess

    from nnconsole.engine.launch import launcher as launch
    from tests.support.paths import ROOT

    cmd = [launch.find_mpiexec(), "-n", "2", "--oversubscribe", "--mca", "btl", "self,sm", sys.executable,
           os.path.join(MPI_SCRIPTS, "nccl_smoke_check.py")] + (["--break-callback"] if broken else [])
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=launch.mpi_environment(), cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads([line for line in out.stdout.splitlines() if line.startswith("{")][-1])
    assert result["all_reduce_correct"] is True
    assert result["callback_correct"] is (not broken), result
    assert result["pack_elements"] * 4 <= 40 << 20 and result["mb"] == 64 and result["busbw_gbs"] > 0
