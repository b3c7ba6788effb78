"""The predictor's inputs for a project: gradient size, compute time per iteration, iterations per epoch.

The gradient size is the learned-parameter count of shape inference (``engine.shapes``) x 4 bytes (float32).
The compute time is ``--compute-ms`` when given, else measured by a previous run of the project: its
``metrics.jsonl`` train records carry ``time_per_iter`` and ``allreduce_share``, so one worker's compute
is ``time_per_iter x (1 - allreduce_share)`` at the run's per-worker batch (``plan.json``); it scales with
the per-worker batch of each layout. No nnabla, no Qt.
"""
from __future__ import annotations

import json
import os
import statistics
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from nnconsole.engine.predict import (DEFAULT_INTER_HOST, DEFAULT_INTRA_HOST, Layout, Link, LinkError, Prediction,
                                      parse_link, predict)

FLOAT32_BYTES = 4


@dataclass(frozen=True)
class MeasuredCompute:
    """Seconds of compute per sample on one worker, and where that figure came from."""

    seconds_per_sample: float
    source: str


def measured_compute(run_dir: str) -> Optional[MeasuredCompute]:
    """One worker's compute per sample in a finished or running run (median over its train records after the
    first, which holds the start-up); None when the run has no usable timing."""
    from nnconsole.engine.runs import iter_metrics
    from nnconsole.engine.run_protocol import PLAN_FILE, TRAIN

    try:
        with open(os.path.join(run_dir, PLAN_FILE), encoding="utf-8") as f:
            per_worker_batch = int(json.load(f)["per_worker_batch"])
        records = list(iter_metrics(run_dir, TRAIN))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    times = []
    for r in records[1:] or records:
        try:
            t = float(r["time_per_iter"]) * (1.0 - float(r.get("allreduce_share") or 0.0))
        except (KeyError, TypeError, ValueError):
            continue
        if t > 0:
            times.append(t)
    if not times or per_worker_batch < 1:
        return None
    return MeasuredCompute(statistics.median(times) / per_worker_batch,
                           f"measured in {run_dir} ({len(times)} train records, batch {per_worker_batch}/worker)")


def latest_measured_compute(project_path: Optional[str]) -> Optional[MeasuredCompute]:
    """The newest run of the project (default results folder) that has iteration timings."""
    from nnconsole.engine.runs import list_runs, results_root

    if not project_path:
        return None
    for run_dir in reversed(list_runs(results_root(project_path))):
        found = measured_compute(run_dir)
        if found is not None:
            return found
    return None


def gradient_bytes(project) -> int:
    """Bytes all-reduced per iteration: every learned parameter of the training network as float32."""
    from nnconsole.engine.shapes import infer_network

    return infer_network(project.network).total_params * FLOAT32_BYTES


@dataclass
class ProjectPrediction:
    """The predictions and the assumptions they rest on (shown with them)."""

    predictions: List[Prediction]
    gradient_bytes: int
    intra: Link
    inter: Link
    assumptions: List[str]

    def header(self) -> str:
        return "\n".join([f"gradients: {self.gradient_bytes / 1e6:.3g} MB per iteration (float32)",
                          f"link between hosts: {self.inter.describe()}; within a host: {self.intra.describe()}",
                          *self.assumptions])


def links(inter_text: Optional[str], intra_text: Optional[str]) -> Tuple[Link, Link, List[str]]:
    """The network and intra-host links from the options, or the defaults (which are then said)."""
    said = []
    if inter_text is None:
        said.append(f"link between hosts assumed ({','.join(DEFAULT_INTER_HOST)}): give --link, or measure it "
                     "with 'nnconsole doctor --hosts'")
    if intra_text is None:
        said.append(f"link within a host assumed ({','.join(DEFAULT_INTRA_HOST)})")
    inter = parse_link(inter_text or ",".join(DEFAULT_INTER_HOST))
    intra = parse_link(intra_text or ",".join(DEFAULT_INTRA_HOST))
    return intra, inter, said


def predict_project(project, layouts: Sequence[Layout], plan_for_workers, inter: Optional[str] = None,
                    intra: Optional[str] = None, compute_ms: Optional[float] = None) -> ProjectPrediction:
    """Predict each layout for ``project``; ``plan_for_workers(N)`` gives the N-worker plan (engine.plan).

    ``compute_ms`` is one worker's compute per iteration at the project's own per-worker batch on one worker.
    """
    intra_link, inter_link, assumptions = links(inter, intra)
    plans = {n: plan_for_workers(n) for n in sorted({lay.workers for lay in layouts})}
    if compute_ms is not None:
        if not compute_ms > 0:
            raise LinkError(f"--compute-ms must be above zero, got {compute_ms}")
        per_sample = compute_ms / 1e3 / plans[1].per_worker_batch
        assumptions.append(f"compute: {compute_ms:g} ms per iteration at batch {plans[1].per_worker_batch} (given)")
    else:
        measured = latest_measured_compute(getattr(project, "path", None))
        if measured is None:
            per_sample = 0.0
            assumptions.append("compute time unknown (no run of this project yet): only the all-reduce is "
                               "counted; train once or give --compute-ms")
        else:
            per_sample = measured.seconds_per_sample
            assumptions.append(f"compute: {measured.source}")
    compute = {n: per_sample * p.per_worker_batch for n, p in plans.items()}
    batches = {n: (p.per_worker_batch * n, p.iterations_per_epoch) for n, p in plans.items()}
    nbytes = gradient_bytes(project)
    return ProjectPrediction(predict(layouts, nbytes, compute, batches, intra_link, inter_link), nbytes,
                             intra_link, inter_link, assumptions)


def prediction_report(project, hosts: Sequence[str], worker_counts: Sequence[int], plan_for_workers,
                      inter: Optional[str] = None, intra: Optional[str] = None,
                      compute_ms: Optional[float] = None) -> str:
    """What ``nnconsole plan --hosts ...`` prints: the assumptions, then one row per layout."""
    from nnconsole.engine.predict import format_predictions, layouts_for

    result = predict_project(project, layouts_for(hosts, worker_counts), plan_for_workers, inter, intra, compute_ms)
    return f"Predicted time per epoch (ring all-reduce)\n{result.header()}\n\n{format_predictions(result.predictions)}"
