"""One trial as a normal run: its project written beside the study, ``nnconsole train`` started on it, its
validation curve fed to the pruner, and the run tagged with the trial (``trial.json`` in the run directory).

The trial's project (dataset paths made absolute, checked when the search loaded the user's project) is
``<results>/search/<study>/trial_<n>.yaml``; the run goes to the project's usual results folder, so it is
listed, replayed and opened like any other run. The re-run of an interrupted trial may continue that trial's
run (``nnconsole train --resume``; ``reuse`` decides), which is then tagged with the new trial. A pruned trial
is stopped through the run's STOP file (its checkpoint kept) and a stop of the search does the same. The child dies with the search (``die_with_parent``):
a killed search leaves no training behind.
"""
from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, field
from typing import Callable, List, Optional

from nnconsole.engine.atomic import atomic_write
from nnconsole.engine.errors import ExitCode
from nnconsole.engine.helper_processes import cli_command
from nnconsole.engine.launch.launcher import die_with_parent, resolved_copy
from nnconsole.engine.project.io import dumps_project
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.protocol import RUN_DIR_EVENT, STOP_FILE, TrialStatus, read_events
from nnconsole.engine.rundir.trials import write_trial

POLL_SECONDS = 0.5


@dataclass
class TrialRequest:
    """How every trial of a search trains: where, on how many workers, for how long, on which device."""

    results_root: str
    trials_dir: str
    workers: int = 1
    epochs: Optional[int] = None
    device: Optional[str] = None
    cuda_devices: str = ""  # this trial slot's GPUs (CUDA_VISIBLE_DEVICES), so K trials never share one
    simulate_workers: int = 0  # N > 0: ``--simulate-workers N`` (N workers simulated on ``workers`` processes)


@dataclass
class TrialOutcome:
    """How a trial's run ended: its directory, exit code, best validation error and per-epoch errors."""

    run_dir: str = ""
    exit_code: int = int(ExitCode.FAILED)
    error: Optional[float] = None
    curve: List[float] = field(default_factory=list)
    pruned: bool = False
    stopped: bool = False
    seconds: float = 0.0


def run_trial(request: TrialRequest, number: int, project, tags: dict,
              on_epoch: Callable[[int, float], bool], should_stop: Callable[[], bool], resume_dir: str = "",
              on_run_dir: Callable[[str], None] = lambda run_dir: None) -> TrialOutcome:
    """Train ``project`` as trial ``number``; ``on_epoch(epoch, error)`` returns True to prune it, ``should_stop``
    True to stop it (the search is stopping). With ``resume_dir`` (an interrupted trial's run of the same
    candidate) the run continues from its checkpoint instead: its validation curve, kept up to the checkpoint,
    is reported from epoch 1 again, since this trial's own curve starts empty. ``on_run_dir`` hears the run
    directory as soon as it exists (the study records it, so a killed search's re-run finds it)."""
    os.makedirs(request.trials_dir, exist_ok=True)
    project_file = os.path.join(request.trials_dir, f"trial_{number:05d}.yaml")
    trial_project = resolved_copy(project)
    trial_project.name = f"{project.name} trial {number}"
    atomic_write(project_file, dumps_project(trial_project).encode())
    events = os.path.join(request.trials_dir, f"trial_{number:05d}.events.jsonl")
    if os.path.exists(events):
        os.unlink(events)
    start = ["--resume", resume_dir] if resume_dir else [project_file, "--output", request.results_root]
    cmd = cli_command() + ["train", *start, "--events", events, "--quiet", "--allow-outside-data",
                           "--gpus", str(request.workers)]
    if request.epochs:
        cmd += ["--epochs", str(request.epochs)]
    if request.device:
        cmd += ["--device", request.device]
    if request.simulate_workers:
        cmd += ["--simulate-workers", str(request.simulate_workers)]
    outcome = TrialOutcome()
    started = time.time()
    log = open(os.path.join(request.trials_dir, f"trial_{number:05d}.log"), "ab")
    try:
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=request.cuda_devices) if request.cuda_devices else None
        child = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent,
                                 stdin=subprocess.DEVNULL, env=env)
        offset, seen = 0, 0
        while True:
            code = child.poll()
            if not outcome.run_dir:
                found, offset = read_events(events, offset)
                for event in found:
                    if event.get("event") == RUN_DIR_EVENT:
                        outcome.run_dir = event["run_dir"]
                        write_trial(outcome.run_dir, dict(tags, trial=number, state=TrialStatus.RUNNING.value))
                        on_run_dir(outcome.run_dir)
            if outcome.run_dir:
                errors = [float(r["error"]) for r in runs.iter_metrics(outcome.run_dir, "validation")]
                for epoch, error in enumerate(errors[seen:], start=seen + 1):
                    outcome.curve.append(error)
                    if not outcome.pruned and not outcome.stopped and on_epoch(epoch, error):
                        outcome.pruned = True
                        _stop(outcome.run_dir)
                seen = len(errors)
                if not outcome.stopped and not outcome.pruned and should_stop():
                    outcome.stopped = True
                    _stop(outcome.run_dir)
            if code is not None:
                outcome.exit_code = code
                # stopped from outside (Ctrl-C to the process group, a STOP file from the GUI) before this loop
                # saw should_stop(): resumable like a stop asked here, not a failure
                outcome.stopped = outcome.stopped or (code == ExitCode.STOPPED and not outcome.pruned)
                break
            time.sleep(POLL_SECONDS)
    finally:
        log.close()
    if outcome.run_dir:
        status = runs.read_status(outcome.run_dir)
        if status is not None and status.best_validation_error is not None:
            outcome.error = float(status.best_validation_error)
        elif outcome.curve:
            outcome.error = min(outcome.curve)
    outcome.seconds = time.time() - started
    return outcome


def _stop(run_dir: str) -> None:
    """The run's own stop request: the workers stop at the next update with a checkpoint."""
    atomic_write(os.path.join(run_dir, STOP_FILE), b"search\n")
