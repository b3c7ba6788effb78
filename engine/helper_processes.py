"""How to start Python helpers and find bundled tools, both from a venv and from a frozen app.

In a PyInstaller one-folder app ``sys.executable`` is the app itself, so ``-m module`` becomes
``--run-module module`` (handled by packaging/nnconsole_app.py), and Open MPI lives in the bundle
as a relocated prefix ``<_MEIPASS>/openmpi/{bin,lib,etc,share}``.
"""
from __future__ import annotations

import os
import sys
from typing import List, MutableMapping, Optional

BUNDLED_OPENMPI_DIR = "openmpi"  # under sys._MEIPASS; packaging/nnconsole.spec puts the prefix there
LIBMPI_SONAME = "libmpi.so.40"  # Open MPI's ABI; mpi4py's MPI.openmpi extension links against it


# The entry script of helper processes (see its docstring: why a script file, not ``-m`` or ``-c``).
START_MODULE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "start_module.py")


def is_frozen() -> bool:
    return bool(getattr(sys, "frozen", False))


def python_module_command(module: str) -> List[str]:
    """The argv that runs ``python -m module`` in this installation, never importing from its working folder."""
    if is_frozen():
        return [sys.executable, "--run-module", module]
    return [sys.executable, START_MODULE, module]


def cli_command() -> List[str]:
    """The argv prefix that runs the ``nnconsole`` CLI here (the frozen app takes CLI arguments directly)."""
    if is_frozen():
        return [sys.executable]
    return python_module_command("nnconsole.engine.cli.main")


def bundled_openmpi_prefix() -> Optional[str]:
    """The Open MPI prefix shipped inside a frozen app, if any."""
    base = getattr(sys, "_MEIPASS", None)
    if not base:
        return None
    prefix = os.path.join(base, BUNDLED_OPENMPI_DIR)
    return prefix if os.path.isdir(prefix) else None


def bundled_mpiexec() -> Optional[str]:
    """mpiexec shipped inside a frozen app, if any."""
    prefix = bundled_openmpi_prefix()
    if not prefix:
        return None
    candidate = os.path.join(prefix, "bin", "mpiexec")
    return candidate if os.access(candidate, os.X_OK) else None


def configure_frozen_environment(environ: Optional[MutableMapping[str, str]] = None) -> None:
    """Point Open MPI and mpi4py at the bundled prefix; a no-op outside a frozen app with Open MPI.

    The values are set, not defaulted: mpi4py's extension is linked against the bundled libmpi, so a
    system ``OPAL_PREFIX`` or ``MPI4PY_LIBMPI`` left in the environment would pair it with the wrong
    runtime. Children (mpiexec, the workers) inherit the settings.
    """
    prefix = bundled_openmpi_prefix()
    if not prefix:
        return
    env = os.environ if environ is None else environ
    env["OPAL_PREFIX"] = prefix
    env["PMIX_PREFIX"] = prefix
    env["PRTE_PREFIX"] = prefix
    libmpi = os.path.join(prefix, "lib", LIBMPI_SONAME)
    if os.path.isfile(libmpi):
        env["MPI4PY_LIBMPI"] = libmpi  # mpi4py dlopens it, so MPI.openmpi.so finds its libmpi
