"""What the project's own runs measured on this machine, for the epoch-time prediction (issue 28 item 2).

Every train record of ``metrics.jsonl`` carries ``time_per_iter`` and ``allreduce_share`` (averaged over the
ranks), and ``plan.json`` the run's workers and per-worker batch. From them each run gives one worker's compute
per iteration and the all-reduce per iteration (medians over its records after the first, which holds the
start-up): ``RunTiming``. A run counts as this machine's when ``launch.json`` names this machine (older runs
name none) and no hosts: runs on other machines or several hosts measured another computer or network.

The newest run of each worker count is kept (``local_run_timings``): what the project's runs look like now, and
the nearest measured worker count for each layout (``nearest``). No nnabla, no Qt.
"""
from __future__ import annotations

import os
import statistics
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

from nnconsole.engine.rundir.launch_options import WorkerOptions, this_machine
from nnconsole.engine.rundir.protocol import METRICS_FILE, TRAIN, VALIDATION
from nnconsole.engine.rundir.store import iter_metrics, list_runs, read_plan, results_root
from nnconsole.engine.rundir.typed_json import RunFileError


@dataclass(frozen=True)
class RunTiming:
    """One run's measured costs per iteration (seconds) at its per-worker batch on ``workers`` workers."""

    run_dir: str
    workers: int
    per_worker_batch: int
    compute_s: float  # one worker's compute per iteration (time_per_iter without its all-reduce share)
    allreduce_s: float  # the gradient all-reduce per iteration (0 on one worker)
    records: int  # train records the medians are taken over
    device: str = ""

    @property
    def name(self) -> str:
        return os.path.basename(self.run_dir)

    @property
    def seconds_per_sample(self) -> float:
        return self.compute_s / self.per_worker_batch

    def describe(self) -> str:
        """'20260101_000000 (2 workers: compute 3.1 ms + all-reduce 6.2 ms per iteration, batch 32/worker)'."""
        return (f"{self.name} ({self.workers} worker{'s' if self.workers > 1 else ''}: compute "
                f"{self.compute_s * 1e3:.3g} ms" + (f" + all-reduce {self.allreduce_s * 1e3:.3g} ms"
                                                    if self.workers > 1 else "")
                + f" per iteration, batch {self.per_worker_batch}/worker)")


_TIMINGS: Dict[tuple, Optional[RunTiming]] = {}  # by (run, metrics.jsonl's mtime and size): the GUI asks often


def run_timing(run_dir: str) -> Optional[RunTiming]:
    """The run's measured compute and all-reduce per iteration; None when it has no usable timing."""
    try:
        st = os.stat(os.path.join(run_dir, METRICS_FILE))
    except OSError:
        return None
    key = (os.path.abspath(run_dir), st.st_mtime_ns, st.st_size)
    if key not in _TIMINGS:
        if len(_TIMINGS) > 256:
            _TIMINGS.clear()
        _TIMINGS[key] = _read_run_timing(run_dir)
    return _TIMINGS[key]


def _read_run_timing(run_dir: str) -> Optional[RunTiming]:
    try:
        plan = read_plan(run_dir)
    except RunFileError:
        return None
    if plan is None or plan.simulated or not plan.per_worker_batch or plan.per_worker_batch < 1:
        return None  # a simulated run's iteration is N workers' compute in turn: not one worker's
    records = list(iter_metrics(run_dir, TRAIN))
    computes, allreduces = [], []
    for r in records[1:] or records:
        try:
            total, share = float(r["time_per_iter"]), float(r.get("allreduce_share") or 0.0)
        except (KeyError, TypeError, ValueError):
            continue
        if total > 0 and 0.0 <= share < 1.0:
            computes.append(total * (1.0 - share))
            allreduces.append(total * share)
    if not computes:
        return None
    return RunTiming(os.path.abspath(run_dir), max(1, int(plan.workers or 1)), int(plan.per_worker_batch),
                     statistics.median(computes), statistics.median(allreduces), len(computes), plan.device or "")


def on_this_machine(run_dir: str) -> bool:
    """Whether the run ran here on one host: launch.json names this machine (or, older, no machine) and no
    hosts or hostfile."""
    try:
        options = WorkerOptions.recorded(run_dir)
    except RunFileError:
        return False
    if options is None:
        return True
    return not options.hosts and not options.hostfile and options.machine in ("", this_machine())


def local_run_timings(project_path: Optional[str], device: str = "") -> List[RunTiming]:
    """The newest measured run of each worker count among the project's runs on this machine (default results
    folder), fewest workers first; ``device`` ('cpu', 'cuda'): only runs on that device (or of an unknown one)."""
    if not project_path:
        return []
    newest: Dict[int, RunTiming] = {}
    for run_dir in reversed(list_runs(results_root(project_path))):
        timing = run_timing(run_dir)
        if timing is None or timing.workers in newest or not on_this_machine(run_dir):
            continue
        if device and timing.device and timing.device != device:
            continue
        newest[timing.workers] = timing
    return [newest[n] for n in sorted(newest)]


def nearest(timings: Sequence[RunTiming], workers: int) -> Optional[RunTiming]:
    """The run whose worker count is nearest ``workers`` (the fewer on a tie); None when there is none."""
    return min(timings, key=lambda t: (abs(t.workers - workers), t.workers), default=None)


def epoch_seconds(run_dir: str) -> Optional[float]:
    """What one epoch took in the run, validation included and start-up left out: the time between its first
    and last validated epochs per epoch (``elapsed`` of the validation records); with one validated epoch, its
    elapsed time. A simulated run's epoch is N workers' compute in turn on this machine. None before any."""
    records = [r for r in iter_metrics(run_dir, VALIDATION)
               if isinstance(r.get("elapsed"), (int, float)) and isinstance(r.get("epoch"), int) and r["epoch"] > 0]
    if not records:
        return None
    first, last = records[0], records[-1]
    if last["epoch"] > first["epoch"]:
        return (float(last["elapsed"]) - float(first["elapsed"])) / (last["epoch"] - first["epoch"])
    return float(last["elapsed"]) / last["epoch"]
