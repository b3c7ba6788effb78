"""The outcome of one doctor step: what was checked, ok/warn/fail/skip, what was found and the fix."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Check:
    """One line of ``nnconsole doctor``'s report (the GPU and the MPI checks both return these)."""

    name: str
    status: str  # ok | warn | fail | skip
    detail: str
    fix: str = ""
