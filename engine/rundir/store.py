"""Run directories: creating them, and reading and writing their status, metrics and checkpoints list.

The CLI and the GUI both read runs only through these files, so a run started headless shows up
in the GUI's history and vice versa. What each file holds and which process writes it (one writer
per status.json field, the typed metrics records, the error records, the exit codes) is the
protocol in ``nnconsole.engine.rundir.protocol``; this module is its reader and writer.
"""
from __future__ import annotations

import json
import os
import re
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Tuple

from nnconsole.engine.atomic import atomic_write
from nnconsole.engine.rundir import safe_json
from nnconsole.engine.rundir.typed_json import RunFileError, read_run_json
from nnconsole.engine.rundir.protocol import (CHECKPOINT_DIR, METRICS_FILE, PLAN_FILE, STATUS_FILE, MetricsRecord,
                                              RunStatus, check_status_writer)


def results_root(project_path: str) -> str:
    """Default results folder: ``<project folder>/results/<project file stem>``."""
    folder = os.path.dirname(os.path.abspath(project_path))
    stem = os.path.splitext(os.path.basename(project_path))[0]
    return os.path.join(folder, "results", stem)


def new_run_dir(root: str, now: Optional[float] = None) -> str:
    """Create and return a fresh run directory under ``root`` named by local time."""
    stamp = time.strftime("%Y%m%d_%H%M%S", time.localtime(now or time.time()))
    os.makedirs(root, exist_ok=True)
    candidate = os.path.join(root, stamp)
    n = 1
    while True:
        try:
            os.makedirs(candidate)
            return candidate
        except FileExistsError:
            n += 1
            candidate = os.path.join(root, f"{stamp}_{n}")


@dataclass
class StatusRecord:
    """status.json: the state of a run as a person reads it in the history list."""

    status: RunStatus = RunStatus.RUNNING
    started: float = field(default_factory=time.time)
    finished: Optional[float] = None
    pid: Optional[int] = None
    workers: int = 1
    logical_batch: int = 0
    epoch: int = 0
    iteration: int = 0
    best_validation_error: Optional[float] = None
    best_epoch: Optional[int] = None
    final_validation_error: Optional[float] = None
    message: str = ""
    failed_rank: Optional[int] = None
    resumable: bool = False
    total_macs: Optional[int] = None

    def __post_init__(self) -> None:
        self.status = RunStatus(self.status)  # a word given by a caller (or a newer writer's) becomes a member

    def to_dict(self) -> Dict[str, Any]:
        return dict(asdict(self), status=RunStatus(self.status).value)  # also a word set after __init__


def write_status(run_dir: str, status: StatusRecord) -> None:
    atomic_write(os.path.join(run_dir, STATUS_FILE), json.dumps(status.to_dict(), indent=2).encode())


def read_status(run_dir: str, strict: bool = False) -> Optional[StatusRecord]:
    """The run's status, or None when the file is missing (or, unless ``strict``, damaged).

    With ``strict`` a damaged file (not JSON, a field of the wrong type) raises RunFileError naming
    the file and the field: commands that act on the run (resume) say so instead of guessing.
    """
    try:
        return read_run_json(os.path.join(run_dir, STATUS_FILE), StatusRecord, required=False,
                             fix="delete status.json to let nnconsole treat the run as ended, or start a new run")
    except RunFileError:
        if strict:
            raise
        return None


def update_status(run_dir: str, writer: str, **changes: Any) -> StatusRecord:
    """Change the fields ``writer`` (protocol.LAUNCHER or WORKER) owns; another's field is a ValueError."""
    check_status_writer(writer, list(changes))
    status = read_status(run_dir) or StatusRecord()
    for key, value in changes.items():
        setattr(status, key, value)
    write_status(run_dir, status)
    return status


@dataclass
class PlanRecord:
    """plan.json as its readers see it: the figures of ``nnconsole.engine.plan.worker_plan.Plan.to_dict()`` that the
    GUI's curve labels and the epoch-time prediction use. The file holds more (the schedule, notes, warnings),
    ignored here; a figure the file lacks (an older or a newer nnconsole wrote it) reads as None."""

    workers: Optional[int] = None
    policy: Optional[str] = None
    per_worker_batch: Optional[int] = None
    update_interval: Optional[int] = None
    logical_batch: Optional[int] = None
    dataset_size: Optional[int] = None
    iterations_per_epoch: Optional[int] = None
    max_epoch: Optional[int] = None
    total_iterations: Optional[int] = None
    base_lr: Optional[float] = None
    effective_lr: Optional[float] = None
    device: Optional[str] = None
    simulated: bool = False  # --simulate-workers: the workers ran one after another in one process


def read_plan(run_dir: str) -> Optional[PlanRecord]:
    """The run's plan.json, or None when the run has none (yet: rank 0 writes it as training starts).

    A damaged file (not JSON, a figure of the wrong type) raises RunFileError naming the file and the field.
    """
    return read_run_json(os.path.join(run_dir, PLAN_FILE), PlanRecord, required=False,
                         fix="plan.json is rewritten when the run is resumed; or start a new run")


class MetricsWriter:
    """Appends one JSON object per line and flushes it, so readers can tail the file live."""

    def __init__(self, run_dir: str):
        self.path = os.path.join(run_dir, METRICS_FILE)
        self._lock = threading.Lock()
        self._fh = open(self.path, "a", buffering=1)
        if self._fh.tell() and not _ends_with_newline(self.path):
            # A record torn by a crash (kill -9, full disk): start on a fresh line so the next
            # record is not glued to it (readers skip the torn piece).
            self._fh.write("\n")

    def write(self, record: MetricsRecord) -> None:
        line = json.dumps(record, separators=(",", ":")) + "\n"
        with self._lock:  # a cache build's thread reports progress while training writes (data.build_overlap)
            self._fh.write(line)
            self._fh.flush()

    def close(self) -> None:
        self._fh.close()


def read_metrics(run_dir: str, offset: int = 0, until: Optional[int] = None) -> Tuple[List[MetricsRecord], int]:
    """Records from byte ``offset`` on (up to byte ``until`` when given), and the offset to continue from.

    A half-written last line (the run is still writing it) is left for the next call.
    """
    path = os.path.join(run_dir, METRICS_FILE)
    records: List[MetricsRecord] = []
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            data = fh.read() if until is None else fh.read(max(until - offset, 0))
    except OSError:
        return records, offset
    end = data.rfind(b"\n") + 1
    for line in data[:end].split(b"\n"):
        record = _record(line)
        if record is not None:
            records.append(record)
    return records, offset + end


def _record(line: bytes) -> Optional[Dict[str, Any]]:
    """The record a metrics line holds, or None for a blank, torn or foreign line (never raises)."""
    if not line.strip():
        return None
    try:
        record = safe_json.loads(line)
    except ValueError:  # torn by a crash, NUL bytes after a power loss, not UTF-8, nested 100,000 deep
        return None
    return record if isinstance(record, dict) and isinstance(record.get("type"), str) else None


def _ends_with_newline(path: str) -> bool:
    with open(path, "rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"


def trim_metrics(run_dir: str, iteration: int) -> int:
    """Drop the records written after the checkpoint at ``iteration``; return how many were dropped.

    A resumed run starts again from its checkpoint, so what the interrupted run wrote beyond it
    (train and validation records, a torn last line) would appear twice. The records at the file's
    end whose iteration is beyond ``iteration`` (or that have none, e.g. a previous resume's warnings
    that preceded them) are cut; the content up to the checkpoint is kept byte for byte, and the file
    is replaced atomically (a crash leaves the old file) with its mode kept. Call it before the
    resumed run writes anything.
    """
    path = os.path.join(run_dir, METRICS_FILE)
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return 0
    keep = data.rfind(b"\n") + 1  # a torn last line always goes
    dropped = 0
    while keep:
        start = data.rfind(b"\n", 0, keep - 1) + 1
        record = _record(data[start:keep])
        at = record.get("iteration") if record else None
        if isinstance(at, (int, float)) and not isinstance(at, bool) and at <= iteration:
            break
        dropped += record is not None
        keep = start
    if keep < len(data):
        atomic_write(path, data[:keep])
    return dropped


def planned_epochs(record: Dict[str, Any]) -> int:
    """The run's whole span in epochs from one train record (0 when the record does not say).

    Train records carry the run's planned iterations, so this holds for live runs, replays, resumed
    runs and runs followed from a terminal alike.
    """
    total, iteration, epoch = record.get("total_iterations"), record.get("iteration"), record.get("epoch")
    if not total or not iteration or not epoch or epoch <= 0:
        return 0
    return round(total * epoch / iteration)


def iter_metrics(run_dir: str, kind: Optional[str] = None) -> Iterator[MetricsRecord]:
    """The run's metrics records (``protocol.MetricsRecord``); only those of ``kind`` when given."""
    records, _ = read_metrics(run_dir)
    for record in records:
        if kind is None or record.get("type") == kind:
            yield record


def list_runs(root: str) -> List[str]:
    """Run directories under a results root, oldest first."""
    if not os.path.isdir(root):
        return []
    runs = [os.path.join(root, d) for d in os.listdir(root)
            if os.path.isfile(os.path.join(root, d, STATUS_FILE))]
    return sorted(runs)


def pid_alive(pid: Optional[int]) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def effective_status(run_dir: str) -> Optional[StatusRecord]:
    """Status with dead running runs reported as failed (their process is gone).

    This is how a run whose launcher was killed (kill -9, power loss, a full disk that kept it from
    recording its end) shows in the history: failed, and resumable when a checkpoint exists.
    """
    status = read_status(run_dir)
    if status and status.status == RunStatus.RUNNING and not pid_alive(status.pid):
        status.status = RunStatus.FAILED
        status.message = status.message or "the training process ended without finishing (killed?)"
        status.resumable = bool(latest_checkpoint(run_dir))
    return status


def checkpoint_dir(run_dir: str) -> str:
    return os.path.join(run_dir, CHECKPOINT_DIR)


def list_checkpoints(run_dir: str) -> List[str]:
    """Checkpoint metadata files (``ckpt-<iteration>.json``), oldest first."""
    folder = checkpoint_dir(run_dir)
    if not os.path.isdir(folder):
        return []
    names = [n for n in os.listdir(folder) if _CHECKPOINT_META.match(n)]
    return [os.path.join(folder, n) for n in sorted(names, key=lambda n: int(n[5:-5]))]


_CHECKPOINT_META = re.compile(r"^ckpt-\d+\.json$")


def latest_checkpoint(run_dir: str) -> Optional[str]:
    found = list_checkpoints(run_dir)
    return found[-1] if found else None
