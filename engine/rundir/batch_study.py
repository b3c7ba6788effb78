"""A large-batch study's record: ``<results>/study/<name>/study.json``, written by ``nnconsole study batch``.

The study trains (or simulates) the project at several worker counts and learning-rate policies (issue 30);
each point is a normal run, and this file says which run belongs to which point, how it stands and what it
measured, plus the recommendation drawn from the measured points (``metrics.batch_recommendation``). The CLI
rewrites the whole file atomically after every change; the GUI's Study view and ``nnconsole study show`` read it
here, so neither needs the study's Optuna storage. A damaged or foreign file reads as no study.
"""
from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from nnconsole.engine.atomic import atomic_write
from nnconsole.engine.rundir import safe_json
from nnconsole.engine.rundir.protocol import StudyPointState

STUDY_FOLDER = "study"  # under the project's results folder
STUDY_FILE = "study.json"
MAX_BYTES = 4 << 20  # a larger study.json is not read
POLICIES = ("linear", "sqrt", "none")  # multi_gpu.scaling's values
POINT_STATES = tuple(s.value for s in StudyPointState)  # queued, running, complete, failed, stopped


@dataclass
class StudyPoint:
    """One (worker count, policy, warm-up) point of the study and the run that measured it."""

    workers: int
    policy: str  # the learning-rate scaling: "linear", "sqrt" or "none"
    warmup_epochs: float = 0.0  # linear warm-up length in epochs (0: none)
    logical_batch: int = 0  # per-worker batch x workers (x gradient accumulation)
    learning_rate: float = 0.0  # the rate the run trained with, after scaling
    simulated: bool = False  # trained as N simulated workers on fewer devices
    state: str = StudyPointState.QUEUED.value  # one of POINT_STATES
    run_dir: str = ""
    validation_error: Optional[float] = None  # the run's best validation error (0..1)
    validation_loss: Optional[float] = None
    predicted_epoch_seconds: Optional[float] = None  # the predictor's time per epoch at this worker count
    measured_epoch_seconds: Optional[float] = None  # what the run took per epoch (simulated runs: on this machine)

    @property
    def key(self) -> str:
        """The point's identity in the study: ``w<workers>-<policy>-warmup<epochs>``."""
        return point_key(self.workers, self.policy, self.warmup_epochs)


def point_key(workers: int, policy: str, warmup_epochs: float) -> str:
    """``w<workers>-<policy>-warmup<epochs>`` (the warm-up written as %g)."""
    return f"w{int(workers)}-{policy}-warmup{float(warmup_epochs):g}"


@dataclass
class Recommendation:
    """The largest worker count whose error stays within ``tolerance`` of one worker's, and how it got there."""

    workers: int
    policy: str
    warmup_epochs: float
    logical_batch: int
    validation_error: float
    baseline_error: float  # the best one-worker error the tolerance is measured from
    tolerance: float  # as a fraction: 0.005 is half a point of error
    reason: str  # one sentence a person reads


@dataclass
class BatchStudy:
    """The whole study: what was asked and every point, with the recommendation when one can be made."""

    name: str
    project: str  # the project file the study trains (absolute)
    per_worker_batch: int
    tolerance: float = 0.005
    epochs: Optional[int] = None  # --epochs given to every point, None: the project's max_epoch
    points: List[StudyPoint] = field(default_factory=list)
    recommendation: Optional[Recommendation] = None

    def point(self, workers: int, policy: str, warmup_epochs: float) -> Optional[StudyPoint]:
        """The point with that identity, or None."""
        key = point_key(workers, policy, warmup_epochs)
        return next((p for p in self.points if p.key == key), None)


def study_dir(results_root: str, name: str) -> str:
    """``<results>/study/<name>``: the study's own folder (its record, storage and point projects)."""
    return os.path.join(results_root, STUDY_FOLDER, name)


def write_study(folder: str, study: BatchStudy) -> None:
    """Write ``study.json`` in ``folder`` atomically (readers see the old or the new record, never half)."""
    os.makedirs(folder, exist_ok=True)
    atomic_write(os.path.join(folder, STUDY_FILE), json.dumps(dataclasses.asdict(study), indent=2).encode())


def read_study(folder: str) -> Optional[BatchStudy]:
    """The study recorded in ``folder``; None when there is none or the file is damaged or foreign."""
    try:
        with open(os.path.join(folder, STUDY_FILE), "rb") as fh:
            data = safe_json.loads(fh.read(MAX_BYTES + 1)[:MAX_BYTES])
        return _study_from(data)
    except (OSError, ValueError, TypeError, KeyError):
        return None


def list_studies(results_root: str) -> List[str]:
    """The folders of every readable study under ``results_root``, by name."""
    base = os.path.join(results_root, STUDY_FOLDER)
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return []
    return [os.path.join(base, n) for n in names if read_study(os.path.join(base, n)) is not None]


def _study_from(data: Any) -> BatchStudy:
    """A BatchStudy from parsed JSON; raises TypeError/KeyError/ValueError on anything else."""
    if not isinstance(data, dict):
        raise TypeError("not an object")
    points = [_point_from(p) for p in data.get("points") or []]
    rec = data.get("recommendation")
    recommendation = Recommendation(**_fields(Recommendation, rec)) if isinstance(rec, dict) else None
    study = BatchStudy(**_fields(BatchStudy, data, skip=("points", "recommendation")))
    if not isinstance(study.name, str) or not isinstance(study.per_worker_batch, int):
        raise TypeError("name or per_worker_batch")
    study.points, study.recommendation = points, recommendation
    return study


def _point_from(data: Any) -> StudyPoint:
    """A StudyPoint from parsed JSON, its workers, policy and state checked."""
    if not isinstance(data, dict):
        raise TypeError("point is not an object")
    point = StudyPoint(**_fields(StudyPoint, data))
    if not isinstance(point.workers, int) or point.workers < 1 or point.policy not in POLICIES \
            or point.state not in POINT_STATES:
        raise ValueError(f"bad point {data!r}")
    return point


def _fields(cls: type, data: Dict[str, Any], skip: tuple = ()) -> Dict[str, Any]:
    """The entries of ``data`` that are fields of dataclass ``cls`` (a newer writer's extra keys are ignored)."""
    names = {f.name for f in dataclasses.fields(cls)} - set(skip)
    return {k: v for k, v in data.items() if k in names}
