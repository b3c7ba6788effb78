"""A search trial's tags in its run directory (``trial.json``): which trial, which values, how it ended.

``nnconsole search`` writes the file when the trial's run directory appears (trial number, parameter values,
structure changes, multiply-adds, study) and adds ``state`` (``protocol.TrialStatus``) when the trial ends. The GUI's trials table reads it
here, so neither side needs Optuna's storage to tell a trial's run from an ordinary one. A damaged or foreign
file reads as no trial. ``nnconsole study batch`` tags its points' runs the same way with ``kind: batch_study``
(and its study and point); those are no search trials, so ``read_trial`` leaves them out unless asked.
"""
from __future__ import annotations

import json
import os
from typing import Optional, Tuple

from nnconsole.engine.atomic import atomic_write
from nnconsole.engine.rundir import safe_json
from nnconsole.engine.rundir.protocol import TRIAL_FILE, TrialStatus

MAX_BYTES = 1 << 20  # a larger trial.json is not read
KIND = "kind"  # which machinery tagged the run; absent: a search trial
SEARCH_TRIAL = "search"
STUDY_POINT = "batch_study"  # a point of ``nnconsole study batch`` (``rundir.batch_study``), not a search trial


def write_trial(run_dir: str, tags: dict) -> None:
    """Tag ``run_dir`` as a trial (``tags`` holds at least ``trial``, its number)."""
    atomic_write(os.path.join(run_dir, TRIAL_FILE), json.dumps(tags, indent=2, default=str).encode())


def read_trial(run_dir: str, kinds: Tuple[str, ...] = (SEARCH_TRIAL,)) -> Optional[dict]:
    """The trial tags of ``run_dir``; None when it is no trial's run of one of ``kinds`` (by default a search's:
    the trials table lists no large-batch study's points) or the file is damaged."""
    try:
        with open(os.path.join(run_dir, TRIAL_FILE), "rb") as fh:
            data = safe_json.loads(fh.read(MAX_BYTES + 1)[:MAX_BYTES])
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("trial"), int):
        return None
    return data if data.get(KIND, SEARCH_TRIAL) in kinds else None


def mark_trial_state(run_dir: str, state: TrialStatus) -> None:
    """Record how the trial of ``run_dir`` ended; a run that is no trial's is left alone."""
    tags = read_trial(run_dir, (SEARCH_TRIAL, STUDY_POINT))
    if tags is not None:
        write_trial(run_dir, dict(tags, state=TrialStatus(state).value))
