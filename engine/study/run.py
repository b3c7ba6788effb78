"""Running a study: its points trained K at once as normal runs, ``study.json`` rewritten after each change.

Each point is a search trial as far as the machinery goes: ``search.trial_run.run_trial`` writes the point's
project beside the study (``trial_<n>.yaml``, n the point's index), starts ``nnconsole train`` on it (one worker:
a plain run; N > 1: ``--simulate-workers N`` in one process, or N real workers), and tags the run with the study
and point (``trial.json``); ``search.runner.run_slots`` runs K slots and turns Ctrl-C into a clean stop (each
running point stops at its next update through its run's STOP file, and is recorded ``stopped``).

One process runs a study at a time (a lock in its folder). A rerun skips the complete points and trains every
other one again from its start: a point left ``running`` by a killed study, a ``stopped`` or a ``failed`` one.
After each point the study records the run's best validation error, its measured time per epoch, the time per
epoch the predictor gives each worker count on this machine (with the compute the study's one-worker runs
measured), and the recommendation.
"""
from __future__ import annotations

import dataclasses
import math
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Set

from nnconsole.engine.errors import ExitCode
from nnconsole.engine.plan.batch_recommendation import recommend
from nnconsole.engine.plan.measured_runs import epoch_seconds
from nnconsole.engine.plan.timing_inputs import PredictionError, predict_project
from nnconsole.engine.plan.record import PlanError
from nnconsole.engine.project.model import Project
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.batch_study import BatchStudy, StudyPoint, write_study
from nnconsole.engine.rundir.lock import RunBusyError, RunLock
from nnconsole.engine.rundir.protocol import StudyPointState, TrialStatus, format_duration
from nnconsole.engine.rundir.trials import KIND, STUDY_POINT, mark_trial_state
from nnconsole.engine.rundir.typed_json import RunFileError
from nnconsole.engine.search.runner import run_slots
from nnconsole.engine.search.trial_run import TrialOutcome, TrialRequest, run_trial
from nnconsole.engine.study.grid import StudyError, point_project

RunTrial = Callable[..., TrialOutcome]
RERUN_STATES = (StudyPointState.RUNNING, StudyPointState.STOPPED, StudyPointState.FAILED)  # a rerun trains them


@dataclass
class StudyJob:
    """One ``nnconsole study batch`` invocation: the study, its folder and project, and how points train."""

    folder: str
    study: BatchStudy
    project: Project  # the user's project, loaded and checked (its path finds its runs for the predictor)
    request: TrialRequest  # results folder, trials folder (the study's), epochs, device
    plan_for_workers: Callable[[Project, int], object]
    parallel: int = 1
    simulate: bool = True  # N > 1 simulated in one process; False: N real workers
    gpus: int = 0  # GPUs shared out among the slots (0: CPU processes)
    asked: Optional[Set[str]] = None  # the keys of the points this command asked for (None: every point)
    durations: List[float] = field(default_factory=list)


def point_request(job: StudyJob, point: StudyPoint, slot: int) -> TrialRequest:
    """How ``point`` trains in ``slot``: one process simulating N workers, or N real ones; on GPUs the slot's own."""
    processes = 1 if job.simulate or point.workers == 1 else point.workers
    request = dataclasses.replace(job.request, workers=processes,
                                  simulate_workers=point.workers if job.simulate and point.workers > 1 else 0)
    if job.gpus:
        width = 1 if job.simulate else max(p.workers for p in job.study.points)
        request.cuda_devices = ",".join(str(i) for i in range(slot * width, slot * width + processes))
    return request


def refresh(job: StudyJob) -> None:
    """The predicted time per epoch of every worker count, and the recommendation, from what is measured now."""
    predicted = predicted_epoch_seconds(job.project, sorted({p.workers for p in job.study.points}),
                                        job.plan_for_workers)
    for point in job.study.points:
        point.predicted_epoch_seconds = predicted.get(point.workers)
    job.study.recommendation = recommend(job.study.points, job.study.tolerance)


def predicted_epoch_seconds(project: Project, workers: List[int],
                            plan_for_workers: Callable[[Project, int], object]) -> Dict[int, Optional[float]]:
    """The predictor's time per epoch of N workers on one host of this machine's kind, by N; empty until a
    run of the project measured its compute here (the predictor never guesses the compute)."""
    try:
        prediction = predict_project(project, [(1, n) for n in workers], lambda n: plan_for_workers(project, n))
    except (PredictionError, PlanError):
        return {}
    return {e.workers_per_host: e.epoch_s for e in prediction.estimates if e.hosts == 1 and e.compute_known}


def record_outcome(point: StudyPoint, outcome: TrialOutcome, stopping: bool) -> None:
    """What the point's run measured, and how it ended, into the point."""
    point.run_dir = outcome.run_dir or point.run_dir
    if outcome.stopped or (stopping and outcome.exit_code != ExitCode.OK):
        point.state = StudyPointState.STOPPED.value
    elif outcome.exit_code != ExitCode.OK or outcome.error is None:
        point.state = StudyPointState.FAILED.value
    else:
        point.state = StudyPointState.COMPLETE.value
    point.validation_error = outcome.error if point.state == StudyPointState.COMPLETE else None
    point.validation_loss, point.measured_epoch_seconds = None, None
    if not outcome.run_dir:
        return
    best = [r for r in runs.iter_metrics(outcome.run_dir, "validation") if r.get("error") == outcome.error]
    point.validation_loss = float(best[0]["loss"]) if best and point.state == StudyPointState.COMPLETE else None
    point.measured_epoch_seconds = epoch_seconds(outcome.run_dir)
    try:
        plan = runs.read_plan(outcome.run_dir)
    except RunFileError:
        plan = None
    if plan is not None:
        point.logical_batch, point.learning_rate = int(plan.logical_batch), float(plan.effective_lr)
    mark_trial_state(outcome.run_dir, TrialStatus(point.state))  # complete, failed, stopped: the same words


def run_study(job: StudyJob, say: Callable[[str], None] = print, stop: Optional[threading.Event] = None,
              runner: RunTrial = run_trial) -> int:
    """Train every point not complete yet, K at once; the exit code (OK; STOPPED after a stop; FAILED when a
    point failed). Raises StudyError when another process runs this study."""
    stop = stop or threading.Event()
    os.makedirs(job.folder, exist_ok=True)
    lock = RunLock(job.folder)
    try:
        lock.acquire()
    except RunBusyError:
        raise StudyError(f"study '{job.study.name}' ({job.folder}) is being run by another nnconsole process; "
                         "wait for it, or stop it (Ctrl-C in its terminal), then run this again") from None
    try:
        return _run_locked(job, say, stop, runner)
    finally:
        lock.release()


def _run_locked(job: StudyJob, say: Callable[[str], None], stop: threading.Event, runner: RunTrial) -> int:
    study, guard = job.study, threading.Lock()
    asked = [p for p in study.points if job.asked is None or p.key in job.asked]
    again = [p.key for p in asked if p.state in RERUN_STATES]
    for point in study.points:
        if point.state == StudyPointState.RUNNING:  # this process holds the study: its last runner is gone
            point.state = StudyPointState.STOPPED.value
    for point in asked:
        if point.state in RERUN_STATES:
            point.state = StudyPointState.QUEUED.value
    queue = [p for p in asked if p.state == StudyPointState.QUEUED]
    done_before = sum(1 for p in asked if p.state == StudyPointState.COMPLETE)
    refresh(job)
    write_study(job.folder, study)
    if again:
        say(f"resuming: point(s) {', '.join(again)} will train again from the start")
    if done_before:
        say(f"{done_before} point(s) complete already: not trained again")
    total = len(queue)

    def next_point() -> Optional[StudyPoint]:
        with guard:
            if stop.is_set() or not queue:
                return None
            point = queue.pop(0)
            point.state = StudyPointState.RUNNING.value
            write_study(job.folder, study)
            return point

    def work(slot: int) -> None:
        while True:
            point = next_point()
            if point is None:
                return
            index = study.points.index(point)
            tags = {KIND: STUDY_POINT, "study": study.name, "point": point.key, "workers": point.workers, "policy": point.policy,
                    "warmup_epochs": point.warmup_epochs, "simulated": point.simulated}
            project = point_project(job.project, point.policy, point.warmup_epochs)
            started = time.time()
            try:
                outcome = runner(point_request(job, point, slot), index, project, tags, lambda e, err: False,
                                 stop.is_set)
            except Exception as exc:  # noqa: BLE001 - one broken point (a disk, a project copy) ends only itself
                outcome = TrialOutcome()
                say(f"point {point.key} failed: {type(exc).__name__}: {exc}")
            with guard:
                record_outcome(point, outcome, stop.is_set())
                job.durations.append(time.time() - started)
                refresh(job)
                write_study(job.folder, study)
                log = os.path.join(job.request.trials_dir, f"trial_{index:05d}.log")  # run_trial's log of the point
                say(progress_line(job, point, total, log if point.state == StudyPointState.FAILED else ""))

    run_slots(job.parallel, work, stop, say, "stopping: the running points stop at their next update and train "
              "again when the study is run again")
    if stop.is_set():
        return int(ExitCode.STOPPED)
    return int(ExitCode.FAILED) if any(p.state == StudyPointState.FAILED for p in study.points) else int(ExitCode.OK)


def progress_line(job: StudyJob, point: StudyPoint, total: int, log: str = "") -> str:
    """'point w4-linear-warmup0 complete: error 3.21%, 2.1 s/epoch [5/18 done, ETA 04:10]': the ETA is the
    mean time of the points this process trained, times the rounds of K left of the ``total`` it set out to."""
    done = sum(1 for p in job.study.points if p.state in (StudyPointState.COMPLETE, StudyPointState.FAILED))
    finished_now = len(job.durations)
    left = max(0, total - finished_now)
    eta = sum(job.durations) / finished_now * math.ceil(left / max(1, job.parallel)) if finished_now else None
    what = (f"error {point.validation_error * 100:.2f}%" if point.validation_error is not None
            else f"see {log or point.run_dir or 'the study folder'}")
    per_epoch = f", {point.measured_epoch_seconds:.3g} s/epoch" if point.measured_epoch_seconds else ""
    return (f"point {point.key} {point.state}: {what}{per_epoch} [{done}/{len(job.study.points)} done, "
            f"ETA {format_duration(eta) if left else '00:00'}]")
