"""The study's grid: the worker counts, policies and warm-ups a user asks for, checked, and the points they make.

Every (workers, policy, warm-up) is one point, fewest workers first (the one-worker points measure the compute
the predictor needs for the others, and the baseline of the recommendation). A warm-up only changes a run whose
learning rate is scaled (``worker_plan``: the warm-up goes from the one-worker rate to the scaled one), so a
warm-up above 0 is not trained with policy ``none`` nor on one worker: it would repeat the warm-up-0 point.
Each point trains a copy of the project with ``multi_gpu.scaling`` and ``multi_gpu.warmup_epochs`` set and the
project's own ``multi_gpu.simulate_workers`` cleared (the study says how each point trains).
"""
from __future__ import annotations

import copy
import math
import re
from typing import Callable, List, Sequence, Tuple

from nnconsole.engine.errors import NnconsoleError
from nnconsole.engine.plan.record import PlanError
from nnconsole.engine.project.model import Project
from nnconsole.engine.rundir.batch_study import POLICIES, BatchStudy, StudyPoint

MAX_WORKERS = 1024  # as the predictor's largest layout
MAX_WARMUP_EPOCHS = 1000.0


class StudyError(NnconsoleError, ValueError):
    """A study that cannot be made or run as asked; the message says what to give instead."""


def parse_workers(text: str) -> List[int]:
    """``--workers 1,2,4,8``: distinct whole numbers from 1 to MAX_WORKERS, 1 among them, in rising order."""
    parts = [p.strip() for p in str(text).split(",")]
    if not parts or any(not p for p in parts):
        raise ValueError(f"--workers '{text}': give worker counts separated by commas, e.g. 1,2,4,8")
    try:
        values = [int(p) for p in parts]
    except ValueError:
        bad = next(p for p in parts if not p.lstrip("+").isdigit())
        raise ValueError(f"--workers '{text}': '{bad}' is not a whole number; give counts like 1,2,4,8") from None
    for v in values:
        if not 1 <= v <= MAX_WORKERS:
            raise ValueError(f"--workers '{text}': {v} workers is outside 1..{MAX_WORKERS}")
    if len(set(values)) != len(values):
        raise ValueError(f"--workers '{text}': a worker count is listed twice")
    if 1 not in values:
        raise ValueError(f"--workers '{text}': include 1, the one-worker baseline the tolerance is measured from "
                         f"(e.g. 1,{text})")
    return sorted(values)


def parse_policies(text: str) -> List[str]:
    """``--policy linear,none``: learning-rate scaling policies of ``multi_gpu.scaling``, each once."""
    values = [p.strip().lower() for p in str(text).split(",")]
    for v in values:
        if v not in POLICIES:
            raise ValueError(f"--policy '{text}': unknown policy '{v}'; choose from {', '.join(POLICIES)}")
    if len(set(values)) != len(values):
        raise ValueError(f"--policy '{text}': a policy is listed twice")
    return values


def parse_warmups(text: str) -> List[float]:
    """``--warmup 0,2``: warm-up lengths in epochs (``multi_gpu.warmup_epochs``), each once."""
    values = []
    for part in str(text).split(","):
        try:
            value = float(part)
        except ValueError:
            raise ValueError(f"--warmup '{text}': '{part.strip()}' is not a number of epochs; give e.g. 0,2") from None
        if not math.isfinite(value) or not 0 <= value <= MAX_WARMUP_EPOCHS:
            raise ValueError(f"--warmup '{text}': {part.strip()} epochs is outside 0..{MAX_WARMUP_EPOCHS:g}")
        values.append(value)
    if len(set(values)) != len(values):
        raise ValueError(f"--warmup '{text}': a warm-up is listed twice")
    return sorted(values)


def parse_tolerance(text: str) -> float:
    """``--tolerance 0.5``: points of error (0.5 = half a point), returned as a fraction (0.005)."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"--tolerance '{text}': give points of validation error, e.g. 0.5") from None
    if not math.isfinite(value) or not 0 <= value < 100:
        raise ValueError(f"--tolerance '{text}': points of error from 0 to under 100, e.g. 0.5")
    return value / 100.0


def parse_name(text: str) -> str:
    """``--study NAME``: the study's folder name under ``<results>/study``: letters, digits, '.', '_', '-'."""
    if not re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}", text):
        raise ValueError(f"--study '{text}': a name of letters, digits, '.', '_' and '-' (not starting with '.'), "
                         "at most 100 characters; it names the study's folder")
    return text


def grid(workers: Sequence[int], policies: Sequence[str], warmups: Sequence[float]) -> List[Tuple[int, str, float]]:
    """The (workers, policy, warm-up) points to train, fewest workers first; warm-ups only where they act."""
    out = []
    for n in sorted(workers):
        for policy in policies:
            for k in sorted(warmups):
                if k > 0 and (policy == "none" or n == 1):
                    continue
                out.append((n, policy, float(k)))
    return out


def point_project(project: Project, policy: str, warmup_epochs: float) -> Project:
    """The project one point trains: the user's, with the point's scaling and warm-up (the user's file is untouched)."""
    copied = copy.deepcopy(project)
    copied.multi_gpu.scaling = policy
    copied.multi_gpu.warmup_epochs = float(warmup_epochs)
    copied.multi_gpu.simulate_workers = 0
    return copied


def planned_points(project: Project, points: Sequence[Tuple[int, str, float]], simulated: bool,
                   plan_for_workers: Callable[[Project, int], object]) -> List[StudyPoint]:
    """Each point with its logical batch and learning rate as the plan gives them; a point the plan refuses (a
    logical batch larger than the training set, ...) raises StudyError naming it."""
    out = []
    for n, policy, k in points:
        try:
            plan = plan_for_workers(point_project(project, policy, k), n)
        except PlanError as exc:
            raise StudyError(f"{n} workers with policy {policy}: {exc}; leave {n} out of --workers") from None
        out.append(StudyPoint(workers=n, policy=policy, warmup_epochs=k, logical_batch=int(plan.logical_batch),
                              learning_rate=float(plan.effective_lr), simulated=simulated and n > 1))
    return out


def merge(study: BatchStudy, planned: Sequence[StudyPoint]) -> BatchStudy:
    """The recorded study with the newly asked points added; a recorded point keeps its state and run, and one
    not complete takes how it will train now (simulated or real, its plan's batch and rate)."""
    for point in planned:
        recorded = study.point(point.workers, point.policy, point.warmup_epochs)
        if recorded is None:
            study.points.append(point)
        elif recorded.state != "complete":
            recorded.simulated, recorded.logical_batch = point.simulated, point.logical_batch
            recorded.learning_rate = point.learning_rate
    study.points.sort(key=lambda p: (p.workers, POLICIES.index(p.policy), p.warmup_epochs))
    return study
