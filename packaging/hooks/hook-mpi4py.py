"""PyInstaller hook for mpi4py 4.x, whose ``MPI`` extension comes in one file per MPI ABI.

``mpi4py.MPI`` is found at run time by ``mpi4py._mpiabi`` (a meta-path finder that picks
``MPI.<abi>.*.so`` after dlopening libmpi), so PyInstaller's import analysis never sees it. The app
bundles Open MPI only, so only the ``openmpi`` variant is collected; its libmpi comes from the bundled
prefix (``MPI4PY_LIBMPI``, set by ``nnconsole.engine.helper_processes.configure_frozen_environment``).
"""
import glob
import os

from PyInstaller.utils.hooks import get_module_file_attribute

_package_dir = os.path.dirname(get_module_file_attribute("mpi4py"))
binaries = [(path, "mpi4py") for path in glob.glob(os.path.join(_package_dir, "MPI.openmpi.*.so"))]
if not binaries:
    raise SystemExit(f"hook-mpi4py: no MPI.openmpi.*.so in {_package_dir}; install mpi4py>=4 from PyPI")
hiddenimports = ["mpi4py._mpiabi"]
