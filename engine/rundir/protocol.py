"""The run-directory protocol: how the CLI, the launcher, the workers and the GUI talk to each other.

The processes of a run never share memory; they meet only through the files below, the process exit
codes (``ExitCode``) and one machine-readable event stream (``--events FILE``). This module is the
one place that says what each file holds, which process writes it, every value of a run's status
(``RunStatus``) and every event name; ``nnconsole.engine.rundir.store`` reads and writes the files.

File in the run directory     Written by                           Read by
----------------------------  -----------------------------------  ------------------------------
snapshot.yaml                 launcher (the project's bytes)       replay
project.yaml                  launcher (datasets made absolute)    workers, replay, resume
launch.json                   launcher (``WorkerOptions``)         workers, replay
plan.json                     rank-0 worker (``Plan.to_dict``)     GUI curve labels, epoch-time
                                                                   prediction (``store.read_plan``:
                                                                   ``PlanRecord``)
status.json                   launcher and rank-0 worker, one      CLI, GUI history, resume
                              writer per field (owners below);     (``store.read_status``;
                              the launcher creates it before       ``status`` is a ``RunStatus``)
                              any worker starts
metrics.jsonl                 rank-0 worker (``MetricsRecord``);   launcher (terminal progress), GUI
                              the launcher adds ``warning``        curves, replay
                              records when it resumes a run;
                              ``dataset_cache`` records while
                              the dataset cache is built
logs/rank<r>.error.json       the failing rank (``ErrorRecord``)   launcher (failure diagnosis)
logs/launcher.log             mpiexec's and the workers' output    launcher (failure diagnosis)
train.log, logs/rank<r>.log   the workers                          people
checkpoints/                  rank-0 worker: ckpt-<it>.h5, .json,  resume
                              .solver.h5, written atomically
writer.lock                   launcher (flock, ``rundir.lock``)    another launcher (refused)
STOP                          launcher or GUI (stop request)       workers (stop at an update)
parameters_*.h5, model_*.nnp  rank-0 worker                        evaluate, export
evaluation/<model>.../        evaluate (``metrics.results``:       GUI EVALUATION tab
                              metrics.json, samples.csv)
inference/<data>_<model>.csv  infer (the GUI names a new file)     GUI Inference view, people
cli-output.log, -errors.log   the CLI the GUI started              people
note.json                     GUI (``rundir.notes``: title, note)  GUI history (never the engine)
trial.json                    search (``rundir.trials``: trial     GUI trials table, people
                              number, values, its end state)

The events file (``--events FILE``, a file the caller names, outside the run directory) holds one JSON
object a line, ``{"event": NAME, ...fields}``, appended by ``announce`` and read by ``read_events``. It is the
one way a command tells the GUI what it does; the terminal lines beside it are for people and nobody parses
them.

Event (``*_EVENT``)   Written by                       Fields                             Read by
--------------------  -------------------------------  ---------------------------------  ------------------
run_dir               train, replay (the launcher)     run_dir, pid (replay: replay_of)   GUI run controller
dataset_progress      dataset create, every 0.2 s and  done, total, elapsed, eta          GUI create dialog
                      at the end
dataset_created       dataset create                   output, files, failed              GUI create dialog
infer_progress        infer, every 0.5 s and at the    done, total (samples)              GUI Inference view
                      end
infer_finished        infer                            output (the results CSV), count,   GUI Inference view
                                                       skipped (images of another size)
evaluate_progress     evaluate, every 0.5 s and at     done, total (samples)              GUI EVALUATION tab
                      the end
evaluate_finished     evaluate                         output (the evaluation folder)     GUI EVALUATION tab
import_finished       import                           project, report, unsupported,      GUI import runner
                                                       notes, initial_parameters,
                                                       datasets_outside
"""
from __future__ import annotations

import enum
import json
import os
import time
from typing import Callable, Dict, FrozenSet, List, Optional, TypedDict, Union

import typing
from nnconsole.engine.errors import ExitCode, exit_code_of
from nnconsole.engine.rundir import safe_json


# ---- files ---------------------------------------------------------------------------------------
STATUS_FILE = "status.json"
METRICS_FILE = "metrics.jsonl"
PLAN_FILE = "plan.json"
SNAPSHOT_FILE = "snapshot.yaml"
RESOLVED_FILE = "project.yaml"
LAUNCH_FILE = "launch.json"
LOG_FILE = "train.log"
LOGS_DIR = "logs"
CHECKPOINT_DIR = "checkpoints"
LOCK_FILE = "writer.lock"
STOP_FILE = "STOP"
NOTE_FILE = "note.json"
TRIAL_FILE = "trial.json"  # a search trial's tags (``rundir.trials``)
EVALUATION_DIR = "evaluation"
INFERENCE_DIR = "inference"

# ---- status.json: the run's status, one writer per field -------------------------------------------
class RunStatus(str, enum.Enum):
    """status.json's ``status``: where a run stands. A ``str`` enum, so the file holds the same words it always
    did and a member equals its word (``RunStatus.FAILED == "failed"``).

    The launcher writes RUNNING when it creates the run and FINISHED, STOPPED or FAILED when it ends; a RUNNING
    run whose launcher is gone reads as FAILED (``store.effective_status``). UNKNOWN is never written: it is
    what a word this version does not know reads as (status.json written by a newer nnconsole), so readers
    treat such a run as neither running nor resumable instead of failing on it.
    """

    RUNNING = "running"
    FINISHED = "finished"
    STOPPED = "stopped"  # on request, with a checkpoint
    FAILED = "failed"
    UNKNOWN = "unknown"

    def __str__(self) -> str:  # the word, in messages and f-strings alike
        return self.value

    @classmethod
    def _missing_(cls, value: object) -> Optional["RunStatus"]:
        return cls.UNKNOWN if isinstance(value, str) else None


class TrialStatus(str, enum.Enum):
    """``trial.json``'s ``state``: how a search trial's run stands (``rundir.trials``), the study's word for it.

    The search writes RUNNING when the trial's run directory appears and one of the others when the trial ends:
    COMPLETE (trained to its end), PRUNED (stopped early by the pruner, or never trained: outside the
    multiply-add bounds), FAILED, or STOPPED (the search stopped; the trial runs again on resume).
    """

    RUNNING = "running"
    COMPLETE = "complete"
    PRUNED = "pruned"
    FAILED = "failed"
    STOPPED = "stopped"

    def __str__(self) -> str:
        return self.value


class StudyPointState(str, enum.Enum):
    """``study.json``'s point ``state`` (``rundir.batch_study``): how one point of a large-batch study stands.

    QUEUED until ``nnconsole study batch`` starts its run, RUNNING while it trains, then COMPLETE, FAILED, or
    STOPPED (the study stopped; the point trains again when the study is run again). A ``str`` enum: the file
    holds these words, and a member equals its word.
    """

    QUEUED = "queued"
    RUNNING = "running"
    COMPLETE = "complete"
    FAILED = "failed"
    STOPPED = "stopped"

    def __str__(self) -> str:
        return self.value


# Every launch appends to logs/launcher.log a line that starts with this and holds its command line, then the
# job's output; messages read only the last launch's part (a resumed run's log also holds the earlier
# launches'), and the GUI's log pane never reads that line as a failure.
LAUNCH_HEADER = "==== nnconsole launch"

RESUMABLE_STATUSES = frozenset({RunStatus.STOPPED, RunStatus.FAILED})  # with a checkpoint, ``train --resume``

LAUNCHER = "launcher"
WORKER = "worker"  # rank 0 only
STATUS_FIELD_OWNERS: Dict[str, str] = {
    "status": LAUNCHER, "started": LAUNCHER, "finished": LAUNCHER, "pid": LAUNCHER, "workers": LAUNCHER,
    "logical_batch": LAUNCHER, "message": LAUNCHER, "failed_rank": LAUNCHER, "resumable": LAUNCHER,
    "total_macs": LAUNCHER,
    "epoch": WORKER, "iteration": WORKER, "best_validation_error": WORKER, "best_epoch": WORKER,
    "final_validation_error": WORKER,
}


def fields_owned_by(writer: str) -> FrozenSet[str]:
    return frozenset(name for name, owner in STATUS_FIELD_OWNERS.items() if owner == writer)


def check_status_writer(writer: str, fields: List[str]) -> None:
    """Raise ValueError when ``writer`` changes a status.json field another process owns (a programming error:
    two writers of one field race, and the last one silently wins)."""
    foreign = sorted(name for name in fields if STATUS_FIELD_OWNERS.get(name) != writer)
    if foreign:
        raise ValueError(f"status.json fields {foreign} are not written by the {writer} "
                         f"(owners: {', '.join(f'{n}={STATUS_FIELD_OWNERS.get(n)}' for n in foreign)})")


# ---- metrics.jsonl records -------------------------------------------------------------------------
class TrainRecord(TypedDict):
    """Every ``log_interval`` iterations and at each epoch's end (rank 0, averaged over all ranks)."""

    type: str  # "train"
    iteration: int
    epoch: float  # fractional: epochs done so far
    samples: int
    loss: float
    error: float
    lr: float
    samples_per_s: float
    time_per_iter: float
    allreduce_share: float
    data_wait_share: float  # of the window's wall time, the training thread's wait for its batches (mean over ranks)
    elapsed: float
    eta: float
    total_iterations: int


class _ValidationRequired(TypedDict):
    type: str  # "validation"
    epoch: int
    iteration: int
    loss: float
    error: float
    count: int
    best: bool
    elapsed: float


class ValidationRecord(_ValidationRequired, total=False):
    """After each validated epoch; coverage figures when the epoch ran from its start."""

    samples_min_count: int
    samples_max_count: int


class _SyncCheckRequired(TypedDict):
    type: str  # "sync_check"
    iteration: int
    workers: int
    identical: bool
    crc32_min: int
    crc32_max: int


class SyncCheckRecord(_SyncCheckRequired, total=False):
    """At the end of an N-worker run: whether every rank holds bit-identical parameters."""

    differing: List[Dict[str, Union[str, float]]]


class WarningRecord(TypedDict):
    """Something the user should know that does not stop the run (shown by the CLI and the GUI)."""

    type: str  # "warning"
    iteration: Optional[int]
    message: str


class DatasetCacheRecord(TypedDict):
    """While the workers build (or wait for) a dataset's shared cache, before training starts (issue 18)."""

    type: str  # "dataset_cache"
    dataset: str  # "training" or "validation"
    done: int  # images decoded so far
    total: int
    eta: Optional[float]  # seconds; None until the build has a rate


class OptimizerLossRecord(TypedDict):
    """With each ``train`` record of a project with several optimizers (issue 17): one per optimizer after the
    first that ran in the window, its loss averaged over its iterations there and all ranks. A record type of
    its own, so that readers of ``train`` records (the first optimizer's) are not mixed up by it."""

    type: str  # "optimizer_loss"
    optimizer: str  # the optimizer's name (Project.optimizers[i].name)
    network: str
    iteration: int
    epoch: float
    loss: float
    lr: float


MetricsRecord = Union[TrainRecord, ValidationRecord, SyncCheckRecord, WarningRecord, DatasetCacheRecord,
                      OptimizerLossRecord]
TRAIN, VALIDATION, SYNC_CHECK, WARNING = "train", "validation", "sync_check", "warning"
DATASET_CACHE, OPTIMIZER_LOSS = "dataset_cache", "optimizer_loss"
RECORD_TYPES = {TRAIN: TrainRecord, VALIDATION: ValidationRecord, SYNC_CHECK: SyncCheckRecord,
                WARNING: WarningRecord, DATASET_CACHE: DatasetCacheRecord, OPTIMIZER_LOSS: OptimizerLossRecord}


def warning_record(message: str, iteration: Optional[int] = None) -> WarningRecord:
    return WarningRecord(type=WARNING, iteration=iteration, message=message)


def record_problems(record: dict) -> List[str]:
    """What in a metrics record does not match its declared kind (empty when it does): missing or unknown
    fields, a value of the wrong type. The contract between the trainer and every reader, checked by tests."""

    cls = RECORD_TYPES.get(record.get("type"))  # type: ignore[arg-type]
    if cls is None:
        return [f"unknown record type {record.get('type')!r}"]
    hints = typing.get_type_hints(cls)
    required = {name for name in hints if name in getattr(cls, "__required_keys__", hints)}
    problems = [f"{record['type']}: field '{name}' missing" for name in sorted(required - set(record))]
    problems += [f"{record['type']}: unknown field '{name}'" for name in sorted(set(record) - set(hints))]
    for name, value in record.items():
        tp = hints.get(name)
        allowed = tuple(t for t in (typing.get_args(tp) or (tp,)) if isinstance(t, type))
        if float in allowed:
            allowed += (int,)
        if tp is not None and allowed and (not isinstance(value, allowed) or
                                            (isinstance(value, bool) and bool not in allowed)):
            problems.append(f"{record['type']}: field '{name}' is {type(value).__name__}, declared {tp}")
    return problems


# ---- errors crossing processes ---------------------------------------------------------------------
class ErrorRecord(TypedDict):
    """``logs/rank<r>.error.json``: why a rank failed, as data (no matching on exception names).

    ``user_error``: the message alone tells the user what to fix (no traceback is shown);
    ``exit_code``: what the CLI returns for it; ``diverged``: resuming with the same settings would
    diverge again (the message points at the last good checkpoint instead).
    """

    rank: int
    type: str
    message: str
    traceback: str
    time: float
    errno: Optional[int]
    user_error: bool
    exit_code: int
    diverged: bool


def error_file(run_dir: str, rank: int) -> str:
    return os.path.join(run_dir, LOGS_DIR, f"rank{rank}.error.json")


def error_record(rank: int, exc: BaseException, trace: str, now: float) -> ErrorRecord:
    """The record a failing rank leaves for the launcher; the flags come from the exception's class."""
    return ErrorRecord(rank=rank, type=type(exc).__name__, message=str(exc), traceback=trace, time=now,
                       errno=getattr(exc, "errno", None) if isinstance(exc, OSError) else None,
                       user_error=bool(getattr(exc, "user_error", False)),
                       exit_code=int(getattr(exc, "exit_code", ExitCode.FAILED)),
                       diverged=bool(getattr(exc, "diverged", False)))


def read_error_records(run_dir: str) -> List[dict]:
    """The ranks' error records, oldest first; damaged files are skipped, missing flags read as False/FAILED."""
    logs = os.path.join(run_dir, LOGS_DIR)
    found = []
    for name in sorted(os.listdir(logs)) if os.path.isdir(logs) else []:
        if not name.endswith(".error.json"):
            continue
        try:
            with open(os.path.join(logs, name), "rb") as fh:
                record = safe_json.loads(fh.read(1 << 22))
        except (OSError, ValueError):
            continue
        if not isinstance(record, dict) or "rank" not in record:
            continue
        record["user_error"] = record.get("user_error") is True
        record["diverged"] = record.get("diverged") is True
        record["exit_code"] = exit_code_of(record.get("exit_code"))
        found.append(record)
    return sorted(found, key=lambda r: r.get("time") if isinstance(r.get("time"), (int, float)) else 0.0)


# ---- events: what a command tells its caller (the GUI) as it works --------------------------------------
# Every event name; the fields of each are in the module docstring's table.
RUN_DIR_EVENT = "run_dir"  # train, replay: run_dir, pid (replay: replay_of)
DATASET_PROGRESS_EVENT = "dataset_progress"  # nnconsole dataset create: done, total, elapsed, eta
DATASET_CREATED_EVENT = "dataset_created"  # nnconsole dataset create: output, files, failed
INFER_PROGRESS_EVENT = "infer_progress"  # nnconsole infer: done, total (samples)
INFER_FINISHED_EVENT = "infer_finished"  # nnconsole infer: output (the results CSV), count, skipped (images)
EVALUATE_PROGRESS_EVENT = "evaluate_progress"  # nnconsole evaluate: done, total (samples)
EVALUATE_FINISHED_EVENT = "evaluate_finished"  # nnconsole evaluate: output (the evaluation folder)
IMPORT_FINISHED_EVENT = "import_finished"  # nnconsole import: project, report, unsupported, notes, ...
EVENTS = (RUN_DIR_EVENT, DATASET_PROGRESS_EVENT, DATASET_CREATED_EVENT, INFER_PROGRESS_EVENT, INFER_FINISHED_EVENT,
          EVALUATE_PROGRESS_EVENT, EVALUATE_FINISHED_EVENT, IMPORT_FINISHED_EVENT)
PROGRESS_EVERY_S = 0.5  # progress events (and terminal lines) at most this often, and always at the end


def announce(events_path: Optional[str], event: str, **fields: object) -> None:
    """Append one JSON line ``{"event": EVENT, ...}`` to the events file the caller (the GUI) gave.

    Best effort: a reader that went away does not stop training.
    """
    if not events_path:
        return
    line = json.dumps({"event": event, **fields}, separators=(",", ":")) + "\n"
    try:
        with open(events_path, "a", encoding="utf-8") as fh:
            fh.write(line)
    except OSError:
        pass


def progress_announcer(events_path: Optional[str], event: str,
                       show: Optional[Callable[[int, int], None]] = None) -> Callable[[int, int], None]:
    """A ``progress(done, total)`` callback for a command's loop: announces ``event`` with ``done`` and ``total``
    at most every ``PROGRESS_EVERY_S`` seconds and always at the end (``done == total``), and hands the same
    figures to ``show`` (the command's terminal line for people) at the same moments."""
    last: List[Optional[float]] = [None]  # when the previous one went out

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if last[0] is not None and now - last[0] < PROGRESS_EVERY_S and done != total:
            return
        last[0] = now
        announce(events_path, event, done=int(done), total=int(total))
        if show is not None:
            show(done, total)

    return progress


def read_events(events_path: str, offset: int = 0) -> tuple:
    """(complete event objects from byte ``offset`` on, offset to continue from); a torn last line waits."""
    try:
        with open(events_path, "rb") as fh:
            fh.seek(offset)
            data = fh.read()
    except OSError:
        return [], offset
    end = data.rfind(b"\n") + 1
    events = []
    for line in data[:end].splitlines():
        try:
            event = safe_json.loads(line)
        except ValueError:  # torn, or nested too deeply to be an event
            continue
        if isinstance(event, dict) and isinstance(event.get("event"), str):
            events.append(event)
    return events, offset + end


# ---- progress as every process shows it ----------------------------------------------------------
# The share of an update's time spent in all-reduce above which the trainer warns (the terminal and the GUI
# show the same threshold).
COMM_WARN_SHARE = 0.30


def format_duration(seconds: Optional[float]) -> str:
    """A duration as the terminal and the GUI show it: ``MM:SS``, ``H:MM:SS``, ``--:--`` when unknown."""
    if seconds is None or seconds != seconds or seconds < 0:
        return "--:--"
    seconds = int(round(seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"

