"""Test-only fault injection, through one environment variable and nowhere else.

Tests make a rank fail at an iteration, perturb one rank's parameters or make a rank report another
backend, to prove that the launcher, the diagnosis and the checks see it. None of this is a command-line
option, a project setting or a launch.json field: production code reads it only through ``seam``, and
only from ``NNCONSOLE_TEST_SEAMS``, a JSON object such as ``{"fail_at_iteration": 5, "fail_rank": 1}``.
Workers inherit the variable from the launcher's environment (``seam_environment`` builds it).
"""
from __future__ import annotations

import json
import os
import time
from typing import Any, Callable, Dict, Optional

SEAMS_VARIABLE = "NNCONSOLE_TEST_SEAMS"
KNOWN_SEAMS = {
    "fail_at_iteration": "the rank named by fail_rank (default 0) raises RuntimeError at this iteration",
    "fail_rank": "the rank that fail_at_iteration applies to",
    "diverge_rank": "this rank perturbs one learned parameter before the end-of-run sync check",
    "report_backend": "'RANK=BACKEND': that rank reports BACKEND in the backend agreement (its device is unchanged)",
    "overlap_on_one_host": "true: the CPU all-reduce overlaps backward on one host too (multi_gpu.allreduce_overlap)",
    "stalled_rank_seconds": "a rank stopped (SIGSTOP) this many seconds ends the job, instead of STALLED_RANK_SECONDS",
    "host_lost_seconds": "a host silent this many seconds ends the job, instead of host_watch.HOST_LOST_SECONDS",
    "pause_at_iteration": "every rank waits at the top of this iteration until a stop is requested (60 s at most)",
    "decode_delay_ms": "every image a dataset decode reads takes this many milliseconds more (a slow cache build)",
}
PAUSE_LIMIT_SECONDS = 60.0  # pause_at_iteration: the longest a rank waits for the stop request


def seam(name: str, environ: Optional[Dict[str, str]] = None) -> Any:
    """The value of test seam ``name``, or None when it is not set (always, outside tests)."""
    if name not in KNOWN_SEAMS:
        raise KeyError(f"unknown test seam {name!r}; known: {', '.join(sorted(KNOWN_SEAMS))}")
    text = (os.environ if environ is None else environ).get(SEAMS_VARIABLE, "")
    if not text:
        return None
    try:
        values = json.loads(text)
    except ValueError:
        return None
    return values.get(name) if isinstance(values, dict) else None


def seam_int(name: str) -> Optional[int]:
    """``seam(name)`` when it is an integer, else None."""
    value = seam(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def seam_seconds(name: str, default: float) -> float:
    """``seam_int(name)`` when it is a positive integer, else ``default`` (the product's value)."""
    value = seam_int(name)
    return float(value) if value is not None and value > 0 else default


def pause_until_stop(requested: Callable[[], bool], limit: float = PAUSE_LIMIT_SECONDS) -> None:
    """pause_at_iteration: wait until ``requested()`` (the rank's stop request) is true, ``limit`` s at most.

    A stop/resume test then needs no run long enough "that the stop arrives before the end": the run waits
    for it at a known iteration, and goes on exactly as before once it comes (or the limit passes)."""
    deadline = time.monotonic() + limit
    while not requested() and time.monotonic() < deadline:
        time.sleep(0.05)


def seam_environment(**values: Any) -> Dict[str, str]:
    """``{NNCONSOLE_TEST_SEAMS: json}`` for a test's subprocess environment (names checked)."""
    unknown = sorted(set(values) - set(KNOWN_SEAMS))
    if unknown:
        raise KeyError(f"unknown test seam(s) {unknown}; known: {', '.join(sorted(KNOWN_SEAMS))}")
    return {SEAMS_VARIABLE: json.dumps(values)}
