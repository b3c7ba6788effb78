"""A study as the terminal shows it: one row per point, then the recommendation sentence.

Columns: workers, logical batch, policy, warm-up (epochs), learning rate, validation error (the run's best, in
percent), predicted and measured seconds per epoch, state. A simulated point's measured time is N workers'
compute in turn on this machine, marked ``(sim)``: it is not what N devices would take (the predicted column is).
"""
from __future__ import annotations

from typing import List, Optional

from nnconsole.engine.rundir.protocol import StudyPointState
from nnconsole.engine.rundir.batch_study import BatchStudy, StudyPoint

HEADER = ("workers", "logical batch", "policy", "warmup", "LR", "val error", "predicted s/epoch",
          "measured s/epoch", "state")


def _seconds(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.3g}"


def point_row(point: StudyPoint) -> List[str]:
    """The table cells of one point."""
    measured = _seconds(point.measured_epoch_seconds)
    if point.simulated and point.measured_epoch_seconds is not None:
        measured += " (sim)"
    return [str(point.workers), str(point.logical_batch), point.policy, f"{point.warmup_epochs:g}",
            f"{point.learning_rate:.4g}",
            "-" if point.validation_error is None else f"{point.validation_error * 100:.2f}%",
            _seconds(point.predicted_epoch_seconds), measured, point.state]


def render_table(study: BatchStudy) -> str:
    """The points as aligned columns (numbers right-aligned)."""
    rows = [list(HEADER)] + [point_row(p) for p in study.points]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
    left = {2, 8}  # policy and state read as words
    lines = ["  ".join(c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
             for r in rows]
    return "\n".join(lines)


def render_study(study: BatchStudy) -> str:
    """What ``nnconsole study show`` prints: the study's settings, the table and the recommendation."""
    epochs = f"{study.epochs} epoch(s)" if study.epochs else "the project's max_epoch"
    head = (f"study '{study.name}' of {study.project}: batch {study.per_worker_batch} per worker, {epochs} per "
            f"point, tolerance {study.tolerance * 100:g} point(s)")
    return "\n".join([head, "", render_table(study), "", recommendation_text(study)])


def recommendation_text(study: BatchStudy) -> str:
    """The recommendation sentence, or why there is none yet."""
    if study.recommendation is not None:
        return "recommendation: " + study.recommendation.reason
    if not any(p.workers == 1 and p.state == StudyPointState.COMPLETE for p in study.points):
        return "recommendation: none yet (no one-worker point is complete: it is the baseline)"
    return "recommendation: none"
