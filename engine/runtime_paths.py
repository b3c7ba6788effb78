"""How to start Python helpers and find bundled tools, both from a venv and from a frozen app.

In a PyInstaller one-folder app ``sys.executable`` is the app itself, so ``-m module`` becomes
``--run-module module`` (handled by packaging/nnconsole_app.py), and Open MPI lives in the bundle.
"""
from __future__ import annotations

import os
import sys
from typing import List, Optional


def is_frozen() -> bool:
    return bool(getattr(sys, "frozen", False))


def python_module_command(module: str) -> List[str]:
    """The argv that runs ``python -m module`` in this installation."""
    if is_frozen():
        return [sys.executable, "--run-module", module]
    return [sys.executable, "-m", module]


def bundled_mpiexec() -> Optional[str]:
    """mpiexec shipped inside a frozen app, if any."""
    base = getattr(sys, "_MEIPASS", None)
    if not base:
        return None
    candidate = os.path.join(base, "openmpi", "bin", "mpiexec")
    return candidate if os.access(candidate, os.X_OK) else None
