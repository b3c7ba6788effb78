"""One run directory, one writer: an exclusive lock held by the launcher for the job's whole life.

Two ``nnconsole train --resume`` of one run started together both passed every check and then
wrote the same metrics, checkpoints and status. The launcher (the CLI process, also when the GUI
starts it) now holds ``flock`` on ``<run>/writer.lock`` from before its first check until the
run's end is recorded; a second launcher is refused at once with the holder's PID. The kernel
drops the lock when the holder's process ends, however it ends (kill -9 included), so a dead
launcher never leaves a stale lock; the lock file itself stays (deleting it would race).
"""
from __future__ import annotations

import errno
import fcntl
import functools
import os
import socket
import time
from typing import Any, Callable, Optional

from nnconsole.engine.errors import NnconsoleError
from nnconsole.engine.rundir.protocol import LOCK_FILE, RESOLVED_FILE


class RunBusyError(NnconsoleError, RuntimeError):
    """Another process is training this run directory; the message names it and what to do."""


def _holder_of(fd: int) -> str:
    """'pid N' (and the host when not this one) as the lock file says, or '' when unreadable."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, 256).decode("ascii", "replace").split()
    except OSError:
        return ""
    if len(text) >= 2 and text[0] == "pid" and text[1].isdigit():
        host = text[3] if len(text) >= 4 and text[2] == "on" else ""
        return f"pid {text[1]}" + (f" on {host}" if host and host != socket.gethostname() else "")
    return ""


def _alive_here(holder: str) -> bool:
    """Whether a holder string names a live process (one on another host is taken as live)."""
    parts = holder.split()
    if len(parts) != 2:
        return bool(holder)
    return os.path.exists(f"/proc/{parts[1]}")


def _current_holder(fd: int, patience_s: float = 2.0) -> str:
    """The holder as its lock file says once the holder has written it.

    The lock file outlives its holders: between a new holder's ``flock`` and its writing its PID,
    the file still names the previous (dead) holder or is empty. Read again for a moment until it
    names a live process, so the message never names a stale PID.
    """
    deadline = time.monotonic() + patience_s
    holder = _holder_of(fd)
    while not _alive_here(holder) and time.monotonic() < deadline:
        time.sleep(0.02)
        holder = _holder_of(fd)
    return holder if _alive_here(holder) else ""


def _suspended(holder: str) -> bool:
    """Whether the holder (a local 'pid N') is stopped (Ctrl-Z, SIGSTOP): state T in /proc."""
    parts = holder.split()
    if len(parts) != 2:
        return False
    try:
        with open(f"/proc/{parts[1]}/stat") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[0] in ("T", "t")
    except (OSError, IndexError):
        return False


class RunLock:
    """``flock`` on ``<run_dir>/writer.lock``; ``acquire`` raises RunBusyError when another process holds it."""

    def __init__(self, run_dir: str) -> None:
        self.run_dir = run_dir
        self.path = os.path.join(run_dir, LOCK_FILE)
        self._fd: Optional[int] = None

    def acquire(self) -> "RunLock":
        # O_CLOEXEC (Python's default): the workers do not inherit the lock; a launcher killed while
        # its workers are still ending is covered by the launcher's check for live workers instead.
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                os.close(fd)
                if exc.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
                    return self  # a file system without locks: the status checks remain
                raise
            holder = _current_holder(fd)
            os.close(fd)
            raise RunBusyError(self._busy_message(holder)) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode())
        self._fd = fd
        return self

    def _busy_message(self, holder: str) -> str:
        who = f"another nnconsole process ({holder})" if holder else "another nnconsole process"
        message = (f"{self.run_dir}: this run is being trained by {who}; a run directory has one writer. "
                   "Wait until it ends, or stop it (Ctrl-C in its terminal, or the GUI's Stop), then resume")
        if _suspended(holder):
            pid = holder.split()[1]
            message += (f". That process is suspended (Ctrl-Z or SIGSTOP) and still owns the run: continue it "
                        f"with 'kill -CONT {pid}' (or 'fg' in its terminal), or end it with 'kill {pid}'")
        return message

    def release(self) -> None:
        if self._fd is not None:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            finally:
                os.close(self._fd)
                self._fd = None

    def __enter__(self) -> "RunLock":
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()


def one_writer_per_run(launch: Callable[..., Any]) -> Callable[..., Any]:
    """Make ``launch(request, report, on_started, warn)`` hold its run directory's lock throughout.

    A resume locks ``request.resume_dir`` before anything is checked or written (so of two resumes
    started together exactly one goes on); a new run locks its fresh directory when the launcher
    announces it (``on_started``), before any worker starts. Released when ``launch`` returns or raises.
    """
    @functools.wraps(launch)
    def locked(request: Any, report: Callable[[dict], None] = lambda r: None,
               on_started: Callable[[str, Any], None] = lambda run_dir, plan: None,
               warn: Callable[[str], None] = lambda m: None) -> Any:
        held = []
        if request.resume_dir and os.path.isfile(os.path.join(request.resume_dir, RESOLVED_FILE)):
            held.append(RunLock(request.resume_dir).acquire())  # (launch explains what is not a run directory)

        def started(run_dir: str, plan: Any) -> None:
            if not held:
                held.append(RunLock(run_dir).acquire())
            on_started(run_dir, plan)

        try:
            return launch(request, report, started, warn)
        finally:
            for lock in held:
                lock.release()
    return locked
