"""Processes a test looks for in /proc: the live ones whose command line names a run, and waiting until
none is left (the interruption and integrity tests check that nothing stays behind)."""
from __future__ import annotations

import os
import time


def live_processes(text: str) -> list:
    """(pid, command line) of live, non-zombie processes whose command line contains ``text``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                args = fh.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{name}/stat") as fh:
                state = fh.read().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if text in args and state != "Z":
            found.append((int(name), args))
    return found


def wait_until_gone(run_dir: str, timeout: float = 30) -> float:
    """Seconds until no process of the run is left (the test fails after ``timeout``)."""
    start = time.monotonic()
    while live_processes(run_dir):
        assert time.monotonic() - start < timeout, f"left behind: {live_processes(run_dir)}"
        time.sleep(0.05)
    return time.monotonic() - start


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (read from /proc)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False


def children(pid: int) -> list:
    """The live (not zombie) child processes of ``pid`` (one pass over /proc)."""
    found = []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        if name.isdigit() and int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(name))
    return found


def decode_processes(pid: int) -> list:
    """The children of ``pid`` that are dataset decode processes (engine/data/decode_process.py)."""
    found = []
    for child in children(pid):
        try:
            with open(f"/proc/{child}/cmdline") as fh:
                if "decode_process" in fh.read():
                    found.append(child)
        except OSError:
            continue
    return found


def wait_until_exited(pids: list, timeout: float, message: str) -> None:
    """Wait until none of ``pids`` is alive; fail with ``message`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while any(alive(p) for p in pids):
        assert time.monotonic() < deadline, message
        time.sleep(0.05)

