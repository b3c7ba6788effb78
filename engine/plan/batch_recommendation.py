"""The large-batch study's recommendation, computed only from the points it measured (issue 30).

Rule: the baseline is the best validation error of the complete one-worker points. Among the complete points
whose error is at most baseline + tolerance (default half a point, 0.005), the recommendation is the one with
the most workers; among equal worker counts the lowest error, then the simpler setting (no warm-up before
warm-up, the policy order linear, sqrt, none). Without a complete one-worker point there is nothing to compare
with and no recommendation; one worker itself is recommended when no larger count stays within the tolerance.
"""
from __future__ import annotations

from typing import List, Optional, Sequence

from nnconsole.engine.rundir.batch_study import POLICIES, Recommendation, StudyPoint

DEFAULT_TOLERANCE = 0.005  # half a point of error
_EPS = 1e-12  # errors equal up to float noise count as within the tolerance


def recommend(points: Sequence[StudyPoint], tolerance: float = DEFAULT_TOLERANCE) -> Optional[Recommendation]:
    """The largest worker count within ``tolerance`` of one worker's best error; None without a baseline."""
    measured = [p for p in points if p.state == "complete" and p.validation_error is not None]
    singles = [p for p in measured if p.workers == 1]
    if not singles:
        return None
    baseline = min(float(p.validation_error) for p in singles)
    within = [p for p in measured if float(p.validation_error) <= baseline + tolerance + _EPS]
    best = min(within, key=lambda p: (-p.workers, float(p.validation_error), p.warmup_epochs > 0,
                                      POLICIES.index(p.policy), p.warmup_epochs))
    return Recommendation(workers=best.workers, policy=best.policy, warmup_epochs=best.warmup_epochs,
                          logical_batch=best.logical_batch, validation_error=float(best.validation_error),
                          baseline_error=baseline, tolerance=tolerance,
                          reason=_reason(best, baseline, tolerance, measured))


def _reason(best: StudyPoint, baseline: float, tolerance: float, measured: List[StudyPoint]) -> str:
    """One sentence: what is recommended, its error against the baseline, and what the next count reached."""
    setting = f"{_policy_words(best.policy)}" + (f" and a {best.warmup_epochs:g}-epoch warm-up"
                                                  if best.warmup_epochs > 0 else "")
    text = (f"{best.workers} worker{'s' if best.workers != 1 else ''} (logical batch {best.logical_batch}) with "
            f"{setting}: validation error {_pct(best.validation_error)}, within {tolerance * 100:g} point"
            f"{'' if tolerance * 100 == 1 else 's'} of 1 worker's {_pct(baseline)}.")
    larger = [p for p in measured if p.workers > best.workers]
    if larger:
        nxt = min(p.workers for p in larger)
        best_next = min(float(p.validation_error) for p in larger if p.workers == nxt)
        text += f" At {nxt} workers the best error was {_pct(best_next)}."
    return text


def _policy_words(policy: str) -> str:
    """How the learning-rate policy reads in a sentence."""
    return {"linear": "linear learning-rate scaling", "sqrt": "square-root learning-rate scaling",
            "none": "no learning-rate scaling"}[policy]


def _pct(error: Optional[float]) -> str:
    """An error (0..1) as a percentage with two decimals."""
    return f"{float(error) * 100:.2f}%"
