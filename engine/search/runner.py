"""A search run: K trials at once until the budget is spent, with progress lines and a clean stop.

Each of K threads asks the study for a trial (a re-run of an interrupted one first: Optuna hands out the
enqueued trials before new ones), designs its project (``space``), trains it as a run (``trial_run``) and
tells the study how it ended. Candidates outside the multiply-add bounds are pruned before they train. A stop
(Ctrl-C, SIGTERM) stops the running trials through their runs' STOP files, fails them as not counted and
enqueues them again with their runs, so the next ``nnconsole search`` continues them from their checkpoints
(``reuse``): the study never holds a trial twice. A candidate identical to a trained one is not trained again.
"""
from __future__ import annotations

import dataclasses
import math
import os
import threading
import time
from dataclasses import dataclass
from typing import Callable, List, Optional

import optuna
from optuna.trial import TrialState

from nnconsole.engine.errors import ExitCode
from nnconsole.engine.project.model import Project
from nnconsole.engine.rundir.protocol import TrialStatus
from nnconsole.engine.rundir.trials import mark_trial_state
from nnconsole.engine.search.policy import Rule
from nnconsole.engine.search.reuse import (DIGEST, DUPLICATE_OF, design_digest, find_original, note_duplicate,
                                          resumable_run)
from nnconsole.engine.search.space import design_trial
from nnconsole.engine.search.study import (NOT_COUNTED, RERUN_OF, RESUME_RUN, RESUMED, RUN_DIR, claim, counted,
                                          fail_and_requeue)
from nnconsole.engine.search.trial_run import TrialOutcome, TrialRequest, run_trial

RunTrial = Callable[..., TrialOutcome]
DUPLICATE = "duplicate"  # the progress line's word for a trial not trained: an earlier one was the same candidate


@dataclass
class SearchJob:
    """One ``nnconsole search`` invocation: the project, its study, the budget and the K x G split."""

    project: Project
    study: optuna.Study
    request: TrialRequest
    rules: List[Rule]
    trials: int
    parallel: int = 1
    timeout_s: float = 0.0
    gpus: int = 0  # the GPUs the trials share out (0: CPU processes); slot k takes GPUs k*G .. k*G+G-1


def slot_request(job: SearchJob, slot: int) -> TrialRequest:
    """The trial request of slot ``slot``: on GPUs, its own G devices, taken from the devices this search sees
    (``CUDA_VISIBLE_DEVICES`` when set, as Slurm sets it to a job's GPUs; else 0 .. gpus-1)."""
    if not job.gpus:
        return job.request
    per = job.request.workers
    visible = [d.strip() for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    devices = visible if len(visible) >= job.gpus else [str(i) for i in range(job.gpus)]
    return dataclasses.replace(job.request, cuda_devices=",".join(devices[slot * per:(slot + 1) * per]))


class Progress:
    """Finished trials, their mean duration and the ETA of the rest, as one line per trial."""

    def __init__(self, job: SearchJob, say: Callable[[str], None]):
        self.job, self.say, self.durations, self.started = job, say, [], time.time()
        self.lock = threading.Lock()

    def trial_done(self, number: int, state: str, detail: str, seconds: float) -> None:
        with self.lock:
            self.durations.append(seconds)
            done = sum(1 for t in self.job.study.get_trials(deepcopy=False)
                       if t.state in (TrialState.COMPLETE, TrialState.PRUNED)
                       or (t.state == TrialState.FAIL and not t.user_attrs.get(NOT_COUNTED)))
            left = max(0, self.job.trials - done)
            eta = sum(self.durations) / len(self.durations) * math.ceil(left / max(1, self.job.parallel))
            self.say(f"trial {number} {state}: {detail} [{done}/{self.job.trials} done, ETA {_duration(eta)}]")


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"


def run_search(job: SearchJob, say: Callable[[str], None] = print, stop: Optional[threading.Event] = None,
               runner: RunTrial = run_trial) -> int:
    """Run trials until the budget is spent or ``stop`` is set; the exit code (OK, or STOPPED)."""
    stop = stop or threading.Event()
    progress = Progress(job, say)
    ask_lock = threading.Lock()
    deadline = time.time() + job.timeout_s if job.timeout_s else math.inf

    def next_trial() -> Optional[optuna.Trial]:
        with ask_lock:
            if stop.is_set() or time.time() >= deadline or counted(job.study) >= job.trials:
                return None
            trial = job.study.ask()
            claim(job.study, trial)
            # another process may have asked at the same moment: the trials beyond the budget are given back
            ahead = [t for t in job.study.get_trials(deepcopy=False) if t.number < trial.number and
                     (t.state != TrialState.FAIL or not t.user_attrs.get(NOT_COUNTED)) and t.state != TrialState.WAITING]
            if len(ahead) >= job.trials:
                trial.set_user_attr(NOT_COUNTED, "over the budget")
                job.study.tell(trial, state=TrialState.FAIL)
                return None
            return trial

    def work(slot: int) -> None:
        request = slot_request(job, slot)
        while True:
            trial = next_trial()
            if trial is None:
                return
            try:
                _one_trial(job, request, trial, progress, stop, runner)
            except Exception as exc:  # noqa: BLE001 - one broken trial (a policy file, a disk) ends only itself
                trial.set_user_attr("failed_because", f"{type(exc).__name__}: {exc}")
                job.study.tell(trial, state=TrialState.FAIL)
                say(f"trial {trial.number} failed: {type(exc).__name__}: {exc}")
            except BaseException:
                _give_back(job, trial, "the search stopped while it ran")
                raise

    run_slots(job.parallel, work, stop, say, "stopping: the running trials stop at their next update and will run "
              "again on resume")
    return int(ExitCode.STOPPED) if stop.is_set() else int(ExitCode.OK)


def run_slots(parallel: int, work: Callable[[int], None], stop: threading.Event, say: Callable[[str], None],
              stopping: str) -> None:
    """Run ``work(slot)`` in ``parallel`` threads until all return; Ctrl-C (SIGTERM made one) says ``stopping``,
    sets ``stop`` (each slot stops its trial through the run's STOP file) and waits for them. Shared by the
    search and the large-batch study (``engine.study``).

    The wait is on an Event the slots set, not ``Thread.join``: a KeyboardInterrupt inside ``join(timeout)``
    leaves Python 3.10's thread looking finished while it still runs, so the stop returned before the running
    trials had ended and been given back."""
    left, count_lock, finished = [parallel], threading.Lock(), threading.Event()

    def slot(k: int) -> None:
        try:
            work(k)
        finally:
            with count_lock:
                left[0] -= 1
                if not left[0]:
                    finished.set()

    threads = [threading.Thread(target=slot, args=(k,), name=f"trial-slot-{k}", daemon=True) for k in range(parallel)]
    for thread in threads:
        thread.start()
    try:
        while not finished.wait(0.2):
            pass
    except KeyboardInterrupt:
        say(stopping)
        stop.set()
        finished.wait()


def _give_back(job: SearchJob, trial: optuna.Trial, why: str) -> None:
    fail_and_requeue(job.study, trial._trial_id, trial.number, dict(trial.params), why,
                     trial.user_attrs.get(RUN_DIR, ""))


def _one_trial(job: SearchJob, request: TrialRequest, trial: optuna.Trial, progress: Progress,
               stop: threading.Event, runner: RunTrial) -> None:
    search = job.project.search
    design = design_trial(job.project, search, trial, job.rules)
    digest = design_digest(design.project.network, design.values)
    trial.set_user_attr(DIGEST, digest)
    trial.set_user_attr("multiply_adds", design.multiply_adds)
    trial.set_user_attr("changes", design.changes)
    words = ", ".join([f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in design.values.items()]
                      + design.changes) or "the project as it is"
    low, high = search.multiply_adds_min, search.multiply_adds_max
    if design.multiply_adds < low or (high and design.multiply_adds > high):
        trial.set_user_attr("pruned_because", f"{design.multiply_adds:,} multiply-adds outside [{low:,}, {high or 'any'}]")
        job.study.tell(trial, state=TrialState.PRUNED)
        progress.trial_done(trial.number, TrialStatus.PRUNED, f"{words}: {design.multiply_adds:,} multiply-adds outside the "
                            "bounds", 0.0)
        return
    original = find_original(job.study, digest, trial.number)
    if original is not None:
        _tell_duplicate(job, trial, original, words, progress)
        return
    trial.set_user_attr("epochs", job.request.epochs or design.project.config.max_epoch)
    trial.set_user_attr("workers", job.request.workers)
    single = len(search.objectives) == 1

    def on_epoch(epoch: int, error: float) -> bool:
        if not single:
            return False
        trial.report(error, epoch)
        return trial.should_prune()

    why: List[str] = []
    resume_dir = resumable_run(trial.user_attrs.get(RESUME_RUN, ""), digest, why)
    if why:
        progress.say(f"trial {trial.number} trains from the start: the interrupted run cannot continue ({why[0]})")
    tags = {"params": design.values, "changes": design.changes, "skipped": design.skipped, DIGEST: digest,
            "multiply_adds": design.multiply_adds, "study": job.study.study_name}
    if resume_dir:
        tags["resumed_from_trial"] = trial.user_attrs.get(RERUN_OF)
        trial.set_user_attr(RESUMED, resume_dir)
    outcome = runner(request, trial.number, design.project, tags, on_epoch, stop.is_set, resume_dir=resume_dir,
                     on_run_dir=lambda run_dir: trial.set_user_attr(RUN_DIR, run_dir))
    if outcome.run_dir:
        trial.set_user_attr(RUN_DIR, outcome.run_dir)
        mark_trial_state(outcome.run_dir, _end_state(outcome, stop.is_set()))
    if outcome.stopped or (stop.is_set() and not outcome.pruned and outcome.exit_code != ExitCode.OK):
        _give_back(job, trial, "the search stopped while it ran")
        progress.trial_done(trial.number, TrialStatus.STOPPED, f"{words}: will run again on resume", outcome.seconds)
        return
    if outcome.pruned:
        job.study.tell(trial, state=TrialState.PRUNED)
        progress.trial_done(trial.number, TrialStatus.PRUNED, f"{words}: error {outcome.curve[-1]:.4f} at epoch "
                            f"{len(outcome.curve)}", outcome.seconds)
        return
    if outcome.exit_code != ExitCode.OK or outcome.error is None:
        trial.set_user_attr("failed_because", f"training ended with exit code {outcome.exit_code}")
        job.study.tell(trial, state=TrialState.FAIL)
        progress.trial_done(trial.number, TrialStatus.FAILED, f"{words}: exit code {outcome.exit_code} (see {outcome.run_dir or 'the trial log'})",
                            outcome.seconds)
        return
    values = [outcome.error] + ([float(design.multiply_adds)] if not single else [])
    job.study.tell(trial, values)
    resumed = f" (continued run of trial {tags['resumed_from_trial']} from its checkpoint)" if resume_dir else ""
    progress.trial_done(trial.number, TrialStatus.COMPLETE, f"{words}: error {outcome.error:.4f}, {design.multiply_adds:,} "
                        f"multiply-adds{resumed}", outcome.seconds)


def _tell_duplicate(job: SearchJob, trial: optuna.Trial, original, words: str, progress: Progress) -> None:
    """Tell the study the earlier identical trial's result for ``trial``, which is not trained again."""
    trial.set_user_attr(DUPLICATE_OF, original.number)
    note_duplicate(original, trial.number)
    if original.state == TrialState.PRUNED:
        for step, value in sorted(original.intermediate_values.items()):
            trial.report(value, step)
        job.study.tell(trial, state=TrialState.PRUNED)
        result = "pruned"
    else:
        job.study.tell(trial, list(original.values))
        result = "error " + ", ".join(f"{v:.4g}" for v in original.values)
    progress.trial_done(trial.number, DUPLICATE, f"{words}: the same candidate as trial {original.number} ({result}), "
                        "not trained again", 0.0)


def _end_state(outcome, stopping: bool) -> TrialStatus:
    """The word ``trial.json`` keeps for how a trial's run ended (the branches below tell the study the same)."""
    if outcome.stopped or (stopping and not outcome.pruned and outcome.exit_code != ExitCode.OK):
        return TrialStatus.STOPPED
    if outcome.pruned:
        return TrialStatus.PRUNED
    return TrialStatus.FAILED if outcome.exit_code != ExitCode.OK or outcome.error is None else TrialStatus.COMPLETE
