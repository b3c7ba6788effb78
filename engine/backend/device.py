"""Choosing the compute context at run time: CPU, or CUDA when nnabla-ext-cuda is installed and asked for.

A requested GPU that cannot be used is an error with a diagnosis, never a silent fall-back.
"""
from __future__ import annotations

import contextlib
import ctypes.util
import functools
import io
import os
import sys
from dataclasses import dataclass
from typing import Any, Optional

from nnconsole.engine.errors import RunFailedError
from nnconsole.engine.backend.gpu_libs import (driver_problem, extension_installed, give_nnabla_libmpi,
                                               give_nnabla_nccl, preload_wheel_libraries)


class DeviceError(RunFailedError, RuntimeError):
    """The requested device cannot be used; the message says why and what to install."""

@dataclass
class DeviceChoice:
    backend: str  # "cpu" | "cuda"
    device_id: int
    type_config: str  # "float" | "half"
    context: Any
    description: str


@functools.lru_cache(maxsize=None)
def preload_nvidia_libraries() -> tuple:
    """Load the libraries nnabla-ext-cuda needs from NVIDIA's PyPI wheels (the 'cuda' extra), globally.

    Those wheels put their .so files under site-packages/nvidia/*/lib, which the dynamic loader does
    not search; ``nnconsole.engine.backend.gpu_libs`` loads exactly the ones the extension needs, dependencies first.
    Returns the paths loaded (none when the wheels are absent, e.g. with a system CUDA).
    """

    return preload_wheel_libraries().loaded


def cuda_diagnosis() -> Optional[str]:
    """None when nnabla's CUDA extension imports and sees a GPU, else the reason in one sentence.

    First, in every process, nnabla is handed mpi4py's libmpi (``give_nnabla_libmpi``: nnabla-ext-cuda
    searches for libmpi when it is imported, registers its NCCL communicator only when that search
    succeeds, and prints "openmpi library is not found" when it fails) and the wheel's NCCL
    (``give_nnabla_nccl``: else a system libnccl.so found by the loader comes first).
    """

    if not extension_installed():
        return ("nnabla-ext-cuda120 is not installed; install the GPU extra: "
                "pip install 'nnconsole[cuda]' (needs an NVIDIA driver for CUDA 12)")
    libraries = preload_wheel_libraries()
    give_nnabla_libmpi()
    give_nnabla_nccl()
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):  # its GPU-list warning goes to stderr, not into results
            import nnabla_ext.cuda  # noqa: F401
    except ImportError as exc:
        cause = driver_problem() or libraries.problem() or f"{exc}; check the CUDA 12 runtime and cuDNN 8"
        return f"nnabla-ext-cuda is installed but does not load: {cause}"
    except Exception as exc:  # the extension raises various errors when no driver is present
        cause = driver_problem() or "is an NVIDIA driver installed?"
        return f"nnabla-ext-cuda failed to initialise ({exc}): {cause}"
    finally:
        if printed.getvalue():
            sys.stderr.write(printed.getvalue())
    try:
        from nnabla_ext.cuda import get_device_count  # deferred: nnabla stays out of the launcher
        count = get_device_count()
    except Exception as exc:
        return f"cannot count CUDA devices ({exc})"
    if count < 1:
        return "nnabla-ext-cuda is installed but no GPU is visible (check nvidia-smi and CUDA_VISIBLE_DEVICES)"
    return None


def gpu_count() -> int:
    """Number of GPUs nnabla can use (0 without the CUDA extension)."""
    if cuda_diagnosis() is not None:
        return 0
    from nnabla_ext.cuda import get_device_count  # deferred: nnabla stays out of the launcher
    return int(get_device_count())


def nccl_library() -> Optional[str]:
    """Path or name of libnccl if the dynamic loader (or NVIDIA's PyPI wheel) can find it."""
    found = ctypes.util.find_library("nccl")
    if found:
        return found
    try:
        import nvidia.nccl  # type: ignore
        import glob
        import os
        for folder in nvidia.nccl.__path__:
            hits = glob.glob(os.path.join(folder, "lib", "libnccl.so*"))
            if hits:
                return hits[0]
    except ImportError:
        pass
    return None


def gpu_for_local_rank(local_rank: int, visible: int) -> int:
    """The GPU a worker computes on: its node-local rank, the GPU nnabla's NCCL communicator will set.

    nnabla-ext-cuda's communicator ``init()`` sets the device to the local rank (the number of earlier
    ranks on the same host) whatever the context says. A worker whose local rank has no visible GPU
    would fail there with "invalid device ordinal"; it is told why and what to change instead.
    """
    if visible < 1:
        raise DeviceError("no GPU is visible to this worker (check nvidia-smi and CUDA_VISIBLE_DEVICES)")
    if local_rank >= visible:
        shown = os.environ.get("CUDA_VISIBLE_DEVICES")
        raise DeviceError(
            f"this worker is process {local_rank + 1} on its machine but sees only {visible} GPU(s)"
            f"{f' (CUDA_VISIBLE_DEVICES={shown})' if shown is not None else ''}: nnabla's NCCL communicator puts "
            f"the n-th process of a machine on GPU n-1, and GPU {local_rank} does not exist here "
            "(CUDA error 'invalid device ordinal'). Let every worker see all GPUs of its machine (Slurm: "
            "--gpus-per-node=N or --gres=gpu:N instead of --gpus-per-task=1; containers and job scripts: no "
            f"per-worker CUDA_VISIBLE_DEVICES), or start at most {visible} worker(s) per machine.")
    return local_rank


def check_nccl_device(nccl_local_rank: int, ctx: Any) -> None:
    """After nnabla's communicator ``init()``: its device (its local rank) must be the engine's device.

    Only CUDA contexts have a device for nnabla to set (CPU stand-ins in tests have none).
    """
    if not any(str(b).startswith(("cuda", "cudnn")) for b in getattr(ctx, "backend", None) or []):
        return
    engine_device = int(getattr(ctx, "device_id", 0) or 0)
    if int(nccl_local_rank) != engine_device:
        raise DeviceError(f"nnabla's NCCL communicator set GPU {nccl_local_rank} (its local rank on this "
                          f"machine) but this worker computes on GPU {engine_device}: the engine's local rank "
                          "and nnabla's disagree (are host names unique per machine?)")


def select_device(device: str, precision: str = "float", local_rank: int = 0) -> DeviceChoice:
    """Pick and activate the nnabla context for this process (device id = local rank on GPU)."""
    import nnabla as nn  # deferred: nnabla stays out of the launcher
    from nnabla.ext_utils import get_extension_context  # deferred: nnabla stays out of the launcher

    type_config = "half" if precision == "half" else "float"
    reason = cuda_diagnosis() if device in ("cuda", "auto") else "not asked for"
    if device == "cuda" or (device == "auto" and reason is None):
        if reason:
            raise DeviceError(f"config.device is 'cuda' but the GPU cannot be used: {reason}. "
                              "Set config.device to 'cpu' (or 'auto') to train on the CPU.")
        from nnabla_ext.cuda import get_device_count  # deferred: nnabla stays out of the launcher
        device_id = gpu_for_local_rank(local_rank, int(get_device_count()))
        ctx = get_extension_context("cudnn", device_id=str(device_id), type_config=type_config)
        nn.set_default_context(ctx)
        return DeviceChoice("cuda", device_id, type_config, ctx, f"CUDA GPU {device_id} ({type_config})")
    if type_config == "half":
        raise DeviceError("config.precision 'half' needs a GPU; nnabla's CPU backend computes in float. "
                          "Set config.precision to 'float'.")
    ctx = get_extension_context("cpu", type_config="float")
    nn.set_default_context(ctx)
    return DeviceChoice("cpu", 0, "float", ctx, "CPU (float)")
