"""Host names for multi-machine runs: ``multi_gpu.hosts``, ``--hosts`` and the lines of a hostfile.

mpiexec hands each host name to ssh as an argument, so a "host" shaped like an option
(``-oProxyCommand=...``) would run a program. Only host names are accepted: RFC 1123 names
(letters, digits and hyphens in dot-separated labels), IPv4 and IPv6 literals, each with an
optional ``:slots`` count (an IPv6 address with slots is written ``[addr]:slots``; a bare IPv6
address has no slot count: its colons are the address's).

``parse_host`` is the one reader of an entry: the checks, the worker count, the predictor's layouts,
the host watch and ``doctor --hosts`` all take the name and the slots from it, so an IPv6 address is
never cut at its first colon. A slot count is at most ``MAX_WORKERS`` (a run's most workers), and
the slots of a whole list are added up arithmetically (``slot_total``) before anything is built per slot.
"""
from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from nnconsole.engine.errors import NnconsoleError
from nnconsole.engine.project.schema import MAX_WORKERS

_LABEL = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")
MAX_SLOTS = MAX_WORKERS  # one host cannot hold more workers than a run may have
HOST_FORMS = "a host name, an IPv4 or IPv6 address, optionally with ':slots' (e.g. node1:4, [fe80::1]:2)"
HOSTFILE_KEYS = ("slots", "max_slots", "max-slots")


class HostsError(NnconsoleError, ValueError):
    """A host list that cannot be used as given (a bad entry, more slots than a run may have, a worker count
    that does not match the slots); the message says what to write instead."""


@dataclass(frozen=True)
class HostEntry:
    """One entry of a host list: the host's name or address (no brackets) and its slot count (None: not given)."""

    name: str
    slots: Optional[int] = None

    @property
    def workers(self) -> int:
        """Workers this host takes when the slots decide (mpiexec's one slot for an entry without a count)."""
        return self.slots or 1


def is_host_name(name: str) -> bool:
    """Whether ``name`` is an RFC 1123 host name or an IPv4/IPv6 literal (never an option)."""
    if not name or len(name) > 253:
        return False
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        pass
    labels = name[:-1].split(".") if name.endswith(".") else name.split(".")
    return all(_LABEL.fullmatch(label) for label in labels)


def _slots(text: str) -> bool:
    return text.isdigit() and text.isascii() and len(text) <= 12 and 1 <= int(text) <= MAX_SLOTS


def parse_host(entry: str) -> HostEntry:
    """``host``, ``host:slots``, ``[v6]``, ``[v6]:slots`` or a bare IPv6 address, read once for everyone;
    HostsError says why an entry is refused."""
    if not isinstance(entry, str):
        raise HostsError(f"{entry!r} is not text; expected {HOST_FORMS}")
    name, slots = entry, None
    if entry.startswith("["):
        close = entry.find("]")
        if close < 0:
            raise HostsError(f"'{entry}' is not a host; expected {HOST_FORMS}")
        name, rest = entry[1:close], entry[close + 1:]
        if rest and not rest.startswith(":"):
            raise HostsError(f"'{entry}' is not a host; expected {HOST_FORMS}")
        slots = rest[1:] if rest else None
        if ":" not in name:
            raise HostsError(f"'{entry}': only IPv6 addresses are written in brackets")
    elif entry.count(":") == 1:
        name, slots = entry.split(":")
    if slots is not None and not _slots(slots):
        raise HostsError(f"'{entry}': the slot count must be a whole number from 1 to {MAX_SLOTS:,}")
    if not is_host_name(name):
        raise HostsError(f"'{entry}' is not a host name; expected {HOST_FORMS}")
    return HostEntry(name, int(slots) if slots is not None else None)


def host_problem(entry: str) -> Optional[str]:
    """Why ``entry`` (``host``, ``host:slots``, ``[v6]:slots`` or a bare IPv6 address) is refused; None if fine."""
    try:
        parse_host(entry)
    except HostsError as exc:
        return str(exc)
    return None


def check_hosts(entries: List[str]) -> List[Tuple[int, str]]:
    """(index, problem) for each refused entry of a host list, then (-1, problem) when the list's slots add up to
    more workers than a run may have (counted, not built)."""
    problems = [(i, p) for i, p in ((i, host_problem(e)) for i, e in enumerate(entries)) if p]
    if not problems:
        total = slot_total(entries)
        if total > MAX_WORKERS:
            problems.append((-1, f"the hosts' slots add up to {total:,} workers, more than the {MAX_WORKERS:,} a run "
                                 "may have"))
    return problems


def parse_hosts(entries: Sequence[str]) -> List[HostEntry]:
    """Every entry of a host list parsed (HostsError on the first bad one)."""
    return [parse_host(e) for e in entries]


def host_name(entry: str) -> str:
    """The name or address of an entry (the entry itself when it is not one: the caller reports that)."""
    try:
        return parse_host(entry).name
    except HostsError:
        return str(entry)


def slot_total(entries: Sequence[str]) -> int:
    """Workers the hosts take when their slots decide (an entry without a count: one), as mpiexec counts them."""
    return sum(parse_host(e).workers for e in entries)


def workers_for_hosts(given: Optional[int], project_workers: int, hosts: Sequence[str],
                      where: str = "--hosts") -> Tuple[int, str]:
    """The worker count of a run on ``hosts`` and, when the hosts decided it, the sentence saying so.

    ``--gpus N`` (``given``) decides when given. Otherwise the hosts' slots do, as mpiexec places one process per
    slot when it is not told how many (one worker per host without a count): ``--hosts a:1,b:1`` runs 2 workers,
    not 1 on this machine. A project's own ``multi_gpu.workers`` other than 1 (its default) that differs from the
    slots is a contradiction and refused: which of the two was meant cannot be guessed."""
    if given or not hosts:
        return (given or project_workers), ""
    total = slot_total(hosts)
    listed = ",".join(hosts)
    if project_workers not in (1, total):
        raise HostsError(f"multi_gpu.workers is {project_workers} but the hosts {listed} ({where}) have {total} "
                         f"slot{'s' if total != 1 else ''}; give --gpus N to choose the count, or make the slots "
                         "add up to the workers")
    return total, (f"{total} worker{'s' if total != 1 else ''}: one per slot of the hosts {listed} ({where}), as "
                   "mpiexec places them; --gpus N chooses another count")


def hostfile_problems(text: str) -> List[Tuple[int, str]]:
    """(line number, problem) for each line of an Open MPI hostfile that is not ``host [slots=N] [max_slots=N]``."""
    problems = []
    for number, line in enumerate(text.splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        problem = None if is_host_name(words[0]) else f"'{words[0]}' is not a host name; expected {HOST_FORMS}"
        for word in words[1:]:
            key, _, value = word.partition("=")
            if problem is None and (key not in HOSTFILE_KEYS or not _slots(value)):
                problem = f"'{word}' is not one of {', '.join(k + '=N' for k in HOSTFILE_KEYS)}"
        if problem:
            problems.append((number, problem))
    return problems


def read_hostfile_problems(path: str) -> List[str]:
    """``path:line: problem`` for each bad line of a hostfile; a file that cannot be read is one problem."""
    if not os.path.isfile(path):
        return [f"{path}: hostfile not found" if not os.path.exists(path) else
                f"{path}: the hostfile is not a regular file"]
    try:
        with open(path, encoding="utf-8", errors="strict") as fh:
            text = fh.read(1 << 20)
    except (OSError, UnicodeDecodeError) as exc:
        return [f"{path}: cannot read the hostfile ({getattr(exc, 'strerror', None) or exc})"]
    return [f"{path}:{line}: {problem}" for line, problem in hostfile_problems(text)]


NETWORK_ENV = "NNCONSOLE_MPI_NETWORK"
_INTERFACE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,14}$")


def network_problem(text: str) -> Optional[str]:
    """Why ``--network`` text (comma-separated subnets like 10.0.0.0/24, or interface names like eth0) is refused."""
    items = [i for i in (text or "").split(",") if i]
    if not items:
        return "empty network: give subnets (10.0.0.0/24) or interface names (eth0), comma-separated"
    for item in items:
        if "/" in item:
            try:
                ipaddress.ip_network(item, strict=False)
                continue
            except ValueError:
                return f"'{item}' is not a subnet (expected e.g. 10.0.0.0/24)"
        if not _INTERFACE.fullmatch(item):
            return f"'{item}' is neither a subnet (10.0.0.0/24) nor an interface name (eth0)"
    return None


def network_mca_args(network: str) -> List[str]:
    """mpiexec options that keep Open MPI's daemons (oob) and ranks (btl tcp) on the hosts' network."""
    return ["--mca", "btl_tcp_if_include", network, "--mca", "oob_tcp_if_include", network]
