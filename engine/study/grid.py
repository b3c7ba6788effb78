"""The study's grid: the points the user's worker counts, policies and warm-ups make (checked by
``nnconsole.engine.plan.study_values``).

Every (workers, policy, warm-up) is one point, fewest workers first (the one-worker points measure the compute
the predictor needs for the others, and the baseline of the recommendation). A warm-up only changes a run whose
learning rate is scaled (``worker_plan``: the warm-up goes from the one-worker rate to the scaled one), so a
warm-up above 0 is not trained with policy ``none`` nor on one worker: it would repeat the warm-up-0 point.
Each point trains a copy of the project with ``multi_gpu.scaling`` and ``multi_gpu.warmup_epochs`` set and the
project's own ``multi_gpu.simulate_workers`` cleared (the study says how each point trains).
"""
from __future__ import annotations

import copy
from typing import Callable, List, Sequence, Tuple

from nnconsole.engine.errors import NnconsoleError
from nnconsole.engine.plan.record import PlanError
from nnconsole.engine.project.model import Project
from nnconsole.engine.rundir.protocol import StudyPointState
from nnconsole.engine.rundir.batch_study import POLICIES, BatchStudy, StudyPoint


class StudyError(NnconsoleError, ValueError):
    """A study that cannot be made or run as asked; the message says what to give instead."""


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
        elif recorded.state != StudyPointState.COMPLETE:
            recorded.simulated, recorded.logical_batch = point.simulated, point.logical_batch
            recorded.learning_rate = point.learning_rate
    study.points.sort(key=lambda p: (p.workers, POLICIES.index(p.policy), p.warmup_epochs))
    return study
