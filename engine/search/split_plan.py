"""Parallel trials or faster trials: the predicted time to finish a search's budget for each K x G split.

With D devices (GPUs, or CPU processes) a search runs K trials at once with G workers each (K x G <= D). The
time of one trial is its start-up (measured: the study's finished trials' time besides their epochs, else the
project's finished runs' plus the command's own start) plus its epochs x the predicted time per epoch of G
workers (``plan.timing_inputs``: the project's measured compute, the all-reduce model); the budget takes the
search command's start-up (measured by the study's earlier searches) plus ceil(trials / K) rounds of trials. Many
parallel trials finish a parameter survey sooner; a sequential sampler (TPE) chooses better from each result,
so among splits within 10% of the fastest the one with the fewest parallel trials is recommended for it.
"""
from __future__ import annotations

import math
import os
import statistics
import subprocess
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Mapping, Optional, Tuple, Union

from nnconsole.engine.errors import NnconsoleError
from nnconsole.engine.helper_processes import cli_command
from nnconsole.engine.plan.measured_runs import on_this_machine, run_timing
from nnconsole.engine.plan.timing_inputs import predict_project
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.protocol import RunStatus

NEAR_FASTEST = 1.10


class SplitError(NnconsoleError, ValueError):
    """A K x G split this machine cannot run without oversubscribing; the message says the largest that fits."""


@dataclass
class SplitEstimate:
    """One split: K parallel trials of G workers, one trial's seconds and the whole budget's."""

    parallel: int
    workers: int
    trial_s: float
    total_s: float
    note: str = ""


def machine_devices(device: Optional[str], gpus: int) -> int:
    """Devices a search may use on this machine: its GPUs for CUDA, else its CPU cores."""
    if device == "cuda" or (device in (None, "auto") and gpus > 0):
        return max(1, gpus)
    return max(1, os.cpu_count() or 1)


def check_split(parallel: int, workers: int, devices: int) -> None:
    """Refuse a split that needs more processes than ``devices``, naming one that fits."""
    if parallel * workers > devices:
        fits = max(1, devices // workers)
        raise SplitError(f"--parallel {parallel} x --workers-per-trial {workers} = {parallel * workers} processes, "
                         f"but this machine has {devices} device(s); use --parallel {fits} (or fewer workers per trial)")


def split_estimates(project, devices: int, trials: int, epochs: int, plan_for_workers: Callable,
                    overhead_s: Union[float, Mapping[int, float]] = 0.0, startup_s: float = 0.0) -> List[SplitEstimate]:
    """Every split K x G = D' (G dividing ``devices``, K = devices // G) with its predicted time, best marked.
    ``overhead_s``: what each trial costs besides its epochs (process start, imports, dataset and graph set-up,
    validation, saving), one figure or one per G (a trial of several workers also starts mpiexec);
    ``startup_s``: the search command's own start-up, once (imports, the project's checks, the study)."""
    sizes = [g for g in range(1, devices + 1) if devices % g == 0]
    prediction = predict_project(project, [(1, g) for g in sizes], plan_for_workers)
    out = []
    for e in prediction.estimates:
        parallel = devices // e.workers_per_host
        extra = overhead_s if isinstance(overhead_s, (int, float)) else overhead_s.get(e.workers_per_host, 0.0)
        trial_s = extra + epochs * e.epoch_s
        out.append(SplitEstimate(parallel, e.workers_per_host, trial_s,
                                 startup_s + math.ceil(trials / parallel) * trial_s))
    fastest = min(s.total_s for s in out)
    near = [s for s in out if s.total_s <= fastest * NEAR_FASTEST]
    for s in out:
        if s.total_s == fastest:
            s.note = "fastest"
    if near:
        best_for_tpe = min(near, key=lambda s: (s.parallel, s.total_s))
        best_for_tpe.note = (best_for_tpe.note + "; " if best_for_tpe.note else "") + "recommended for TPE"
    return out


def trial_overhead(durations: List[Tuple[float, int, int]], epoch_s: Callable[[int], float]) -> Optional[float]:
    """Median seconds a finished trial took besides its epochs' predicted time, from (seconds, epochs, workers)
    of the study's finished trials; None when there are none."""
    extra = [max(0.0, seconds - epochs * epoch_s(workers)) for seconds, epochs, workers in durations]
    return statistics.median(extra) if extra else None


def overheads_by_workers(durations: List[Tuple[float, int, int]], epoch_s: Callable[[int], float],
                         sizes: List[int]) -> Dict[int, float]:
    """``trial_overhead`` for each G of ``sizes`` from the trials of G workers, else from all trials (0 if none)."""
    overall = trial_overhead(durations, epoch_s) or 0.0
    return {g: trial_overhead([d for d in durations if d[2] == g], epoch_s) or overall for g in sizes}


def run_durations(project_path: str, device: str = "") -> List[Tuple[float, int, int]]:
    """(seconds, epochs, workers) of the project's finished runs on this machine, from their status records
    (the launcher's start to the run's end), for a project with no finished trial yet: with ``cli_start_s``
    they give a trial's start-up the same way the study's trials do."""
    out = []
    for run_dir in runs.list_runs(runs.results_root(project_path)):
        status = runs.read_status(run_dir)
        if (status is None or status.status != RunStatus.FINISHED or not status.started or not status.finished
                or not status.epoch or not on_this_machine(run_dir)):
            continue
        timing = run_timing(run_dir)
        if device and timing is not None and timing.device and timing.device != device:
            continue
        out.append((float(status.finished - status.started), int(status.epoch), int(status.workers or 1)))
    return out


def cli_start_s(tries: int = 2) -> float:
    """Seconds this machine takes to start the ``nnconsole`` command (interpreter and imports), the part of a
    trial its run's records do not hold (it comes before the run directory): the fastest of ``tries``."""
    best = math.inf
    for _ in range(tries):
        started = time.perf_counter()
        subprocess.run(cli_command() + ["--version"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=False, timeout=120)
        best = min(best, time.perf_counter() - started)
    return best


def render_splits(estimates: List[SplitEstimate], compute_known: bool) -> str:
    rows = [("K trials at once", "G workers each", "s / trial", "budget", "note")]
    for s in estimates:
        rows.append((str(s.parallel), str(s.workers), f"{s.trial_s:.3g}", _hours(s.total_s), s.note))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    text = "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)
    if not compute_known:
        text += "\ncompute time unknown (no run of this project yet): only the all-reduce is counted; train once first"
    return text


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.2f} h" if seconds >= 3600 else f"{seconds / 60:.1f} min"
