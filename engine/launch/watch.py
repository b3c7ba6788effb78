"""Watching a running job and explaining how it ended: metrics tailing, stop requests, stopped ranks,
and the failure message (which rank, which process, what to do next).

``nnconsole.engine.launch.launcher`` starts the job and owns the run's status; this module watches the processes it
started and reads what they left (``logs/rank<r>.error.json``, this launch's part of
``logs/launcher.log``).

Stopped ranks: a rank whose process is stopped (state ``T``: SIGSTOP, or SIGTSTP sent to it) holds
every other rank in the next all-reduce, so the job would spin forever. The launcher looks at the
ranks' process states every STALL_CHECK_SECONDS; a rank seen stopped for STALLED_RANK_SECONDS ends
the job (SIGCONT + SIGTERM to the job's process group, SIGKILL after KILL_GRACE_SECONDS), and the
message names the rank, its PID and the cause. A stop request (Ctrl-C, SIGTERM, the GUI's Stop)
while a rank is stopped ends the job at once. A rank paused by a debugger (state ``t``) is left alone.
"""
from __future__ import annotations

import errno
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.protocol import LAUNCH_HEADER, STOP_FILE, read_error_records
from nnconsole.engine.errors import ExitCode
from nnconsole.engine.helper_processes import START_MODULE
from nnconsole.engine.test_seams import seam_seconds
from nnconsole.engine.rundir.store import latest_checkpoint

STOP_GRACE_SECONDS = 120.0  # a stop request waits this long for the workers' checkpoint at an iteration end
KILL_GRACE_SECONDS = 5.0  # after SIGTERM, the job's processes get this long before SIGKILL
POLL_SECONDS = 0.2
STALL_CHECK_SECONDS = 1.0  # how often the ranks' process states are read
STALLED_RANK_SECONDS = 5.0  # a rank stopped this long ends the job (documented in docs/multi-gpu.md)
# Below this much free space the run directory's disk counts as full in failure messages.
DISK_FULL_BYTES = 1 << 20
# Variables that carry a process's rank, by launcher: Open MPI, PMIx, Slurm.
RANK_VARIABLES = (b"OMPI_COMM_WORLD_RANK", b"PMIX_RANK", b"SLURM_PROCID")
WORKER_MODULE = b"nnconsole.engine.train.worker"
START_SCRIPT = os.fsencode(os.sep + os.path.basename(START_MODULE))  # helper_processes' entry script


@dataclass
class Stall:
    """A rank whose process is stopped: who, which process, and for how long it has been seen stopped."""

    rank: Optional[int]  # None: the launcher's own child (mpiexec) is the stopped process
    pid: int
    seconds: float

    def describe(self) -> str:
        who = f"rank {self.rank} (pid {self.pid})" if self.rank is not None else f"mpiexec (pid {self.pid})"
        return (f"{who} was stopped (SIGSTOP) and the job was ended: a stopped rank holds every other rank "
                f"in the next all-reduce (ranks stopped for {stalled_rank_seconds():g} s end the job)")


def stalled_rank_seconds() -> float:
    """How long a stopped rank is tolerated: STALLED_RANK_SECONDS (a test may shorten it: test_seams)."""
    return seam_seconds("stalled_rank_seconds", STALLED_RANK_SECONDS)


# ---- processes of a run ---------------------------------------------------------------------------
def _cmdline(pid: int) -> List[bytes]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().split(b"\0")
    except OSError:
        return []


def _is_worker_of(args: List[bytes], target: bytes) -> bool:
    """Whether ``args`` is ``<python> start_module.py|-c|-m|--run-module ... nnconsole.engine.train.worker RUN_DIR``
    for ``target``."""
    args = [a for a in args if a]
    return (len(args) >= 3 and WORKER_MODULE in args[-2:]
            and (args[1] in (b"-c", b"-m", b"--run-module") or args[1].endswith(START_SCRIPT))
            and os.path.abspath(args[-1].decode(errors="replace")).encode() == target)


def worker_processes(run_dir: str, include_launchers: bool = True) -> List[int]:
    """Live processes of ``run_dir``'s workers (Linux /proc; empty elsewhere).

    ``include_launchers`` also counts an mpiexec whose command line starts the run's workers.
    """
    target = os.path.abspath(run_dir).encode()
    found = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        args = _cmdline(int(name))
        if not args or WORKER_MODULE not in args:
            continue
        if _is_worker_of(args, target) or (include_launchers and any(
                os.path.abspath(a.decode(errors="replace")).encode() == target for a in args[-2:] if a)):
            found.append(int(name))
    return found


def _rank_of(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            env = dict(v.split(b"=", 1) for v in fh.read().split(b"\0") if b"=" in v)
    except OSError:
        return 0
    for name in RANK_VARIABLES:
        value = env.get(name, b"")
        if value.isdigit():
            return int(value)
    return 0  # a lone worker, started without a launcher


def worker_ranks(run_dir: str) -> Dict[int, int]:
    """``{rank: pid}`` of the run's live worker processes."""
    return {_rank_of(pid): pid for pid in worker_processes(run_dir, include_launchers=False)}


def process_state(pid: int) -> str:
    """The one-letter state of ``pid`` from /proc (``R``, ``S``, ``T`` stopped, ``Z``...); '' when gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[0]
    except (OSError, IndexError):
        return ""


class StallDetector:
    """Notices a stopped rank (or a stopped mpiexec) of one job; see the module's docstring."""

    def __init__(self, run_dir: str, child_pid: int):
        self.run_dir = run_dir
        self.child_pid = child_pid
        self.stopped_since: Dict[int, float] = {}  # pid -> when first seen stopped
        self.ranks: Dict[int, Optional[int]] = {}  # pid -> rank of the stopped processes
        self.last_check = 0.0

    def check(self, now: float, force: bool = False) -> Optional[Stall]:
        """The longest-stopped process, or None; reads /proc at most every STALL_CHECK_SECONDS unless forced."""
        if not force and now - self.last_check < STALL_CHECK_SECONDS:
            return self._longest(now)
        self.last_check = now
        ranks = {pid: rank for rank, pid in worker_ranks(self.run_dir).items()}
        watched = dict(ranks)
        watched.setdefault(self.child_pid, None)
        stopped = {pid for pid in watched if process_state(pid) == "T"}
        self.stopped_since = {pid: self.stopped_since.get(pid, now) for pid in stopped}
        self.ranks = {pid: watched[pid] for pid in stopped}
        return self._longest(now)

    def _longest(self, now: float) -> Optional[Stall]:
        if not self.stopped_since:
            return None
        pid = min(self.stopped_since, key=self.stopped_since.get)
        return Stall(self.ranks.get(pid), pid, now - self.stopped_since[pid])


# ---- waiting --------------------------------------------------------------------------------------
class Watcher:
    """Tails metrics.jsonl while the job runs and hands new records to a reporter."""

    def __init__(self, run_dir: str, report: Callable[[dict], None]):
        self.run_dir = run_dir
        self.report = report
        self.offset = 0

    def poll(self) -> None:
        records, self.offset = runs.read_metrics(self.run_dir, self.offset)
        for record in records:
            try:
                self.report(record)
            except OSError:
                # The terminal or the GUI that read our output is gone (EPIPE/EIO): keep training.
                self.report = lambda r: None


def wait_for_job(child: subprocess.Popen, run_dir: str, watcher: Watcher,
                 probe: Any = None) -> Tuple[int, Optional[Stall]]:
    """Wait for the job to end, turning Ctrl-C/SIGTERM into a STOP file; (exit status, stall that ended it).

    ``probe`` (nnconsole.engine.launch.host_watch.HostProbe, several hosts only) ends the job when a host stops
    answering; what it returns then stands in for the stall."""
    stop_asked: List[float] = []

    def on_signal(signum, frame):  # noqa: ARG001
        if not stop_asked:
            stop_asked.append(time.monotonic())
            try:
                open(os.path.join(run_dir, STOP_FILE), "w").close()
            except OSError:  # a full disk: the workers take SIGTERM as the same stop request
                try:
                    os.killpg(child.pid, signal.SIGTERM)
                except OSError:
                    pass

    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[sig] = signal.signal(sig, on_signal)
        except ValueError:
            pass
    detector = StallDetector(run_dir, child.pid)
    stalled_after = stalled_rank_seconds()
    stall: Optional[Stall] = None
    checked_after_stop = False
    try:
        while child.poll() is None:
            watcher.poll()
            now = time.monotonic()
            found = detector.check(now, force=bool(stop_asked) and not checked_after_stop)
            checked_after_stop = bool(stop_asked)
            if found and (found.seconds >= stalled_after or stop_asked):
                stall = found
                end_job(child, run_dir)
                break
            lost = probe.lost() if probe is not None else None
            if lost is not None:
                stall = lost
                end_job(child, run_dir)
                break
            if stop_asked and now - stop_asked[0] > STOP_GRACE_SECONDS:
                end_job(child, run_dir)
            time.sleep(POLL_SECONDS)
        watcher.poll()
        return child.returncode, stall
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if child.poll() is None:
            end_job(child, run_dir)


def end_job(child: subprocess.Popen, run_dir: str) -> None:
    """SIGTERM the job's process group and the run's worker processes (mpiexec may give them groups of their
    own), with SIGCONT so that stopped processes act on it; SIGKILL what is left after KILL_GRACE_SECONDS.

    Workers are found afresh by their command line at each signal, so a recycled PID is never hit."""
    def send(sig: int) -> None:
        try:
            os.killpg(child.pid, sig)
        except OSError:
            pass
        for pid in worker_processes(run_dir, include_launchers=False):
            if pid != child.pid:
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass

    send(signal.SIGTERM)
    send(signal.SIGCONT)
    try:
        child.wait(timeout=KILL_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        pass
    send(signal.SIGKILL)
    child.wait()


# ---- what the job left behind ---------------------------------------------------------------------
def disk_free(path: str) -> Optional[int]:
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def launch_header(cmd: List[str]) -> str:
    """The line every launch writes to logs/launcher.log before the job's output."""
    return f"{LAUNCH_HEADER} {time.strftime('%Y-%m-%d %H:%M:%S')}: {' '.join(cmd)}\n"


def log_tail(run_dir: str, lines: int = 15) -> str:
    """The end of this launch's part of logs/launcher.log, without nnabla's chatter and banners."""
    launcher_log = os.path.join(run_dir, "logs", "launcher.log")
    if not os.path.isfile(launcher_log):
        return ""
    with open(launcher_log, errors="replace") as fh:
        text = fh.readlines()
    starts = [i for i, line in enumerate(text) if line.startswith(LAUNCH_HEADER)]
    mine = text[starts[-1] + 1:] if starts else text
    kept = [line for line in mine if "][INFO]:" not in line and not line.startswith("-----")]
    return "".join(kept[-lines:])


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


# Open MPI 5 (PRTE) says either, depending on when the daemon went: both name the host.
_LOST_DAEMON = re.compile(r"lost communication with a remote daemon.*?Remote daemon\s*:\s*\S+ on node (\S+)"
                          r"|daemon failed to report back.*?Remote host:\s*(\S+)", re.S)


def lost_host(run_dir: str) -> str:
    """The message for a job whose mpiexec lost a host's daemon ('' if none was lost): that host went
    down, its network failed or its processes were killed, and Open MPI ended every rank."""
    path = os.path.join(run_dir, "logs", "launcher.log")
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, os.path.getsize(path) - 65536))
            text = fh.read().decode(errors="replace")
    except OSError:
        return ""
    text = text[text.rfind("==== nnconsole launch"):] if "==== nnconsole launch" in text else text
    found = _LOST_DAEMON.search(text)
    if not found:
        return ""
    return (f"host {found.group(1) or found.group(2)} was lost: Open MPI lost its daemon there (the machine went "
            f"down, its network link failed, or its processes were killed) and ended the job; check the host, or "
            f"leave it out (--hosts/--hostfile) and resume")


def diagnose_failure(run_dir: str, exit_code: int, stall: Optional[Stall] = None) -> Tuple[Optional[int], str, int]:
    """(failed rank or None, message, exit code for the CLI) of a failed job.

    ``exit_code`` is the launcher's child's status as subprocess reports it: negative when a signal
    killed it. A positive status is an exit code even above 128 (mpiexec's own codes are not signals).
    """

    errors = [] if stall else read_error_records(run_dir)
    free = disk_free(run_dir)
    disk_full = free is not None and free < DISK_FULL_BYTES
    code = ExitCode.FAILED
    if stall:
        rank, message = stall.rank, stall.describe()
    elif errors:
        first = errors[0]
        rank, kind = first.get("rank"), str(first.get("type", "Error"))
        message = f"rank {rank} failed: {kind}: {first.get('message', '')}"
        if first.get("errno") == errno.ENOSPC:
            disk_full = True
        if first["user_error"]:  # the flags the failing rank wrote (protocol.ErrorRecord), not names
            code = ExitCode.BAD_INPUT if first["exit_code"] == ExitCode.BAD_INPUT else ExitCode.FAILED
        elif not disk_full:
            message += "\n" + str(first.get("traceback", "")).rstrip()
    elif lost_host(run_dir):
        rank, message = None, lost_host(run_dir)
    else:
        rank = None
        tail = log_tail(run_dir)
        found = re.search(r"process rank (\d+) with PID (\d+) on node \S+ exited on\s+signal (\d+)", tail)
        killed = found is not None or exit_code < 0
        if found:
            rank = int(found.group(1))
            what = f"rank {rank} (pid {found.group(2)}) was killed by {signal_name(int(found.group(3)))}"
        elif exit_code < 0:
            what = f"the worker process was killed by {signal_name(-exit_code)}"
        else:
            what = f"a worker ended with exit code {exit_code}"
        if killed:
            message = f"{what} and left no traceback (killed from outside, or by the kernel when memory ran out)"
        elif "Traceback (most recent call last)" in tail and not disk_full:
            message = f"{what}; its output ends with:\n{tail.rstrip()}"
        else:
            message = f"{what} and left no traceback"
            if tail and not disk_full:
                message += "; its output ends with:\n" + tail.rstrip()
    last = latest_checkpoint(run_dir)
    if disk_full:
        message += f"\nthe disk holding {run_dir} is full ({free or 0:,} bytes free): free some space first"
    if last is not None and errors and errors[0]["diverged"]:
        # Resuming would diverge again with the same settings: point at what was kept instead.
        message += f"\nlast good checkpoint kept: {last[:-5]}.h5"
    elif last is not None:
        message += (f"\nlast checkpoint kept: {os.path.basename(last)[:-5]}; continue with: "
                    f"nnconsole train --resume {run_dir}")
    return rank, message, code
