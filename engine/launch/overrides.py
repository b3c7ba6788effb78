"""Project settings the command line replaces for one run (``nnconsole train --allreduce-precision half``).

The launcher applies them to the project it loaded, before the run directory is written: the run's own
project.yaml (what the workers load, what replay and resume use) then records the value used, while the user's
file and the run's snapshot of it keep theirs. A resumed run may change them; its project.yaml is rewritten.
Pure Python (no nnabla, no MPI).
"""
from __future__ import annotations

from typing import Any, Mapping

from nnconsole.engine.errors import NnconsoleError
from nnconsole.engine.project.schema import PRECISIONS

# ``LaunchRequest`` fields that replace the ``multi_gpu`` setting of the same name.
COMM_OVERRIDES = ("allreduce_precision", "allreduce_overlap")


class OverrideError(NnconsoleError, ValueError):
    """An override the run cannot use; the message names the setting and the values it takes."""


def apply_overrides(project: Any, given: Mapping[str, Any]) -> bool:
    """Set each ``multi_gpu`` setting of ``given`` that is not None; True when anything changed."""
    precision = given.get("allreduce_precision")
    if precision is not None and precision not in PRECISIONS:
        raise OverrideError(f"multi_gpu.allreduce_precision '{precision}' is not a precision; use one of "
                            f"{', '.join(PRECISIONS)}")
    changed = False
    for name in COMM_OVERRIDES:
        value = given.get(name)
        if value is not None and getattr(project.multi_gpu, name) != value:
            setattr(project.multi_gpu, name, value)
            changed = True
    return changed


def describe_overrides(given: Mapping[str, Any]) -> str:
    """'multi_gpu.allreduce_precision half, multi_gpu.allreduce_overlap off' ('' when none was given)."""
    return ", ".join(f"multi_gpu.{name} " + (("on" if value else "off") if isinstance(value, bool) else str(value))
                     for name in COMM_OVERRIDES for value in [given.get(name)] if value is not None)
