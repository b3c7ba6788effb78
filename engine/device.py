"""Choosing the compute context at run time: CPU, or CUDA when nnabla-ext-cuda is installed and asked for.

A requested GPU that cannot be used is an error with a diagnosis, never a silent fall-back.
"""
from __future__ import annotations

import ctypes.util
import functools
from dataclasses import dataclass
from typing import Any, Optional


class DeviceError(RuntimeError):
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
    not search; ``engine.gpu_libs`` loads exactly the ones the extension needs, dependencies first.
    Returns the paths loaded (none when the wheels are absent, e.g. with a system CUDA).
    """
    from engine.gpu_libs import preload_wheel_libraries

    return preload_wheel_libraries().loaded


def cuda_diagnosis() -> Optional[str]:
    """None when nnabla's CUDA extension imports and sees a GPU, else the reason in one sentence.

    In an MPI worker this first hands nnabla the libmpi that mpi4py loaded (``give_nnabla_libmpi``):
    nnabla-ext-cuda searches for libmpi when it is imported, and registers its NCCL communicator only
    when that search succeeds.
    """
    import importlib.util

    from engine.gpu_libs import driver_problem, give_nnabla_libmpi, preload_wheel_libraries

    try:
        installed = importlib.util.find_spec("nnabla_ext.cuda") is not None
    except (ImportError, ValueError):
        installed = False
    if not installed:
        return ("nnabla-ext-cuda120 is not installed; install the GPU extra: "
                "pip install 'nnconsole[cuda]' (needs an NVIDIA driver for CUDA 12)")
    libraries = preload_wheel_libraries()
    give_nnabla_libmpi()
    try:
        import nnabla_ext.cuda  # noqa: F401
    except ImportError as exc:
        cause = driver_problem() or libraries.problem() or "check the CUDA 12 runtime and cuDNN 8"
        return f"nnabla-ext-cuda is installed but failed to load ({exc}): {cause}"
    except Exception as exc:  # the extension raises various errors when no driver is present
        cause = driver_problem() or "is an NVIDIA driver installed?"
        return f"nnabla-ext-cuda failed to initialise ({exc}): {cause}"
    try:
        from nnabla_ext.cuda import get_device_count
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
    from nnabla_ext.cuda import get_device_count
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


def select_device(device: str, precision: str = "float", local_rank: int = 0) -> DeviceChoice:
    """Pick and activate the nnabla context for this process (device id = local rank on GPU)."""
    import nnabla as nn
    from nnabla.ext_utils import get_extension_context

    type_config = "half" if precision == "half" else "float"
    reason = cuda_diagnosis() if device in ("cuda", "auto") else "not asked for"
    if device == "cuda" or (device == "auto" and reason is None):
        if reason:
            raise DeviceError(f"config.device is 'cuda' but the GPU cannot be used: {reason}. "
                              "Set config.device to 'cpu' (or 'auto') to train on the CPU.")
        from nnabla_ext.cuda import get_device_count
        count = get_device_count()
        device_id = local_rank % count
        ctx = get_extension_context("cudnn", device_id=str(device_id), type_config=type_config)
        nn.set_default_context(ctx)
        return DeviceChoice("cuda", device_id, type_config, ctx, f"CUDA GPU {device_id} ({type_config})")
    if type_config == "half":
        raise DeviceError("config.precision 'half' needs a GPU; nnabla's CPU backend computes in float. "
                          "Set config.precision to 'float'.")
    ctx = get_extension_context("cpu", type_config="float")
    nn.set_default_context(ctx)
    return DeviceChoice("cpu", 0, "float", ctx, "CPU (float)")
