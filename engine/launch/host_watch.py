"""Notice a host of a multi-host job that stops answering (machine down, link down) while ranks wait on it.

When a host's link goes down, Open MPI's ranks on the other hosts wait in the all-reduce for data that
never comes and its TCP connections only time out after many minutes. The launcher therefore asks each
host, every PROBE_SECONDS in a background thread, for a TCP connection to its ssh port (the port
mpiexec itself uses): an answer (accepted or refused) means the machine is there; a host that has not
answered for HOST_LOST_SECONDS ends the job with a message naming it. The run keeps its checkpoints.
Only a host that answered once counts: one whose port 22 is filtered (ssh through a jump host, another
port) is never probed into a false alarm.
"""
from __future__ import annotations

import errno
import socket
import threading
import time
from typing import Dict, List, Optional

from nnconsole.engine.plan.hosts import host_name
from nnconsole.engine.test_seams import seam_seconds

PROBE_SECONDS = 2.0
HOST_LOST_SECONDS = 15.0
SSH_PORT = 22


def host_names(hosts: List[str], hostfile: str = "") -> List[str]:
    """The host names of ``--hosts`` entries (``h``, ``h:slots``, ``[v6]:slots``) and a hostfile's lines."""
    names = [host_name(entry) for entry in hosts]  # the one parser: '[v6]:2' and a bare v6 address keep their colons
    if hostfile:
        try:
            with open(hostfile, encoding="utf-8", errors="replace") as fh:
                names += [line.split("#", 1)[0].split()[0] for line in fh if line.split("#", 1)[0].split()]
        except OSError:
            pass
    return list(dict.fromkeys(names))


def answers(host: str, port: int = SSH_PORT, timeout: float = PROBE_SECONDS) -> bool:
    """Whether ``host`` answers a TCP connection on ``port`` (a refusal is an answer: the machine is there)."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except ConnectionRefusedError:
        return True
    except OSError as exc:
        return exc.errno == errno.ECONNRESET


class HostLost:
    """A host that stopped answering; shaped like launch_watch.Stall (rank, pid, seconds, describe)."""

    rank = None
    pid = None

    def __init__(self, host: str, seconds: float):
        self.host, self.seconds = host, seconds

    def describe(self) -> str:
        return (f"host {self.host} was lost: it has not answered for {self.seconds:.0f} s (machine down or its "
                f"network link failed) and the other ranks were waiting for it, so the job was ended; check "
                f"the host, or leave it out (--hosts/--hostfile) and resume")


class HostProbe:
    """Probes every host in a daemon thread; ``lost()`` gives the first host silent for HOST_LOST_SECONDS."""

    def __init__(self, hosts: List[str], lost_after: Optional[float] = None, port: int = SSH_PORT):
        now = time.monotonic()
        self.last_answer: Dict[str, float] = {h: now for h in hosts}
        self.lost_after = seam_seconds("host_lost_seconds", HOST_LOST_SECONDS) if lost_after is None else lost_after
        # A few probes fit in the silence that counts as lost (the product's 15 s: every PROBE_SECONDS).
        self.every = min(PROBE_SECONDS, self.lost_after / 4)
        self.port = port
        self.answered: set = set()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="host-probe", daemon=True)
        if hosts:
            self._thread.start()

    def _run(self) -> None:
        while not self._done.is_set():
            for host in list(self.last_answer):
                if answers(host, self.port, timeout=self.every):
                    self.last_answer[host] = time.monotonic()
                    self.answered.add(host)
            self._done.wait(self.every)

    def lost(self, now: Optional[float] = None) -> Optional[HostLost]:
        now = time.monotonic() if now is None else now
        silent = {h: now - t for h, t in self.last_answer.items() if now - t >= self.lost_after and h in self.answered}
        if not silent:
            return None
        host = max(silent, key=silent.get)
        return HostLost(host, silent[host])

    def close(self) -> None:
        self._done.set()
