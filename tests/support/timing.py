"""Time limits in tests that scale with how fast this machine runs right now.

Some tests guard against a hang or a blow-up (a YAML bomb refused "quickly", a stop request honoured
"promptly"): a bound is the only way to say that. A fixed number of seconds, though, fails on a machine that
is loaded (CI beside other jobs, pytest-xdist beside a GUI test) although nothing is wrong. ``budget``
turns the seconds a test allows on an idle 2-core machine into the seconds it allows now: it times a fixed
pure-Python workload in the same moment and scales by how much slower than idle that ran. A genuine hang or
a quadratic blow-up is still caught, since those are orders of magnitude beyond any load; speed goals
themselves live in bench/.
"""
from __future__ import annotations

import time

# The workload below on an idle 2-core x86_64 VM (CPython 3.10): about 20 ms.
IDLE_WORKLOAD_SECONDS = 0.02
MAX_SCALE = 20.0  # beyond this the machine is too busy to tell a hang from load; the test still gets a bound


def _workload_seconds() -> float:
    """The best of three runs of a fixed loop (the best: the run least disturbed by other processes)."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        total = 0
        for i in range(200_000):
            total += i * i
        best = min(best, time.perf_counter() - start)
    return best


def slowness() -> float:
    """How many times slower than idle this machine runs Python now (1.0 at idle or faster)."""
    return min(MAX_SCALE, max(1.0, _workload_seconds() / IDLE_WORKLOAD_SECONDS))


def budget(seconds: float) -> float:
    """``seconds`` (the allowance on an idle machine) scaled by the machine's present ``slowness``."""
    return seconds * slowness()
