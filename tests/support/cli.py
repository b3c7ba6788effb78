"""The real CLI in a subprocess, as the user and the GUI run it: a command to its end, or a training paused
at an iteration (test seam) for the stop/resume tests; and the run directory a training announces."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import List, Optional

from .paths import ROOT

# Stop/resume runs pause at this iteration (test seam) until the stop comes, so a small run is enough for
# the stop to arrive mid-run; it is mid-epoch for 1 worker (8 iterations an epoch of 64 samples) and 2 (4).
PAUSE_AT = 6


def nnconsole(args: List[str], timeout: float = 300, check: bool = True,
              env: Optional[dict] = None) -> subprocess.CompletedProcess:
    """Run the real CLI in a subprocess (as the user and the GUI do)."""
    full_env = dict(os.environ, **(env or {}))
    full_env["PYTHONPATH"] = ROOT + os.pathsep + full_env.get("PYTHONPATH", "")
    result = subprocess.run([sys.executable, "-m", "nnconsole.engine.cli.main", *args], capture_output=True, text=True,
                            timeout=timeout, env=full_env, cwd=ROOT)
    if check and result.returncode != 0:
        raise AssertionError(f"nnconsole {' '.join(args)} exited {result.returncode}\n"
                             f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}")
    return result


def run_dir_from(output: str) -> str:
    """The run directory printed by ``nnconsole train``."""
    for line in output.splitlines():
        if line.startswith("run directory: "):
            return line.split(": ", 1)[1].strip()
    raise AssertionError(f"no run directory in output:\n{output}")


def start_paused_training(project: str, *extra: str, pause_at: int = PAUSE_AT) -> subprocess.Popen:
    """``nnconsole train project -q *extra`` in the background, its workers pausing at ``pause_at``."""
    from nnconsole.engine.test_seams import seam_environment

    env = dict(os.environ, PYTHONPATH=ROOT, **seam_environment(pause_at_iteration=pause_at))
    return subprocess.Popen([sys.executable, "-m", "nnconsole.engine.cli.main", "train", project, "-q", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)


def wait_for_pause(proc: subprocess.Popen, results: str, pause_at: int = PAUSE_AT, timeout: float = 60) -> str:
    """The run directory once its training records reach ``pause_at`` (log_interval must divide it): the
    workers then wait there for the stop."""
    from nnconsole.engine.rundir import store as runs

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = runs.list_runs(results)
        if found and any(r["iteration"] >= pause_at for r in runs.iter_metrics(found[-1], "train")):
            return found[-1]
        if proc.poll() is not None:
            raise AssertionError(f"training ended early: {proc.communicate()}")
        time.sleep(0.05)
    raise AssertionError("no training records appeared")
