"""Host names for multi-machine runs: ``multi_gpu.hosts``, ``--hosts`` and the lines of a hostfile.

mpiexec hands each host name to ssh as an argument, so a "host" shaped like an option
(``-oProxyCommand=...``) would run a program. Only host names are accepted: RFC 1123 names
(letters, digits and hyphens in dot-separated labels), IPv4 and IPv6 literals, each with an
optional ``:slots`` count (an IPv6 address with slots is written ``[addr]:slots``).
"""
from __future__ import annotations

import ipaddress
import re
from typing import List, Optional, Tuple
import os

_LABEL = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")
MAX_SLOTS = 1 << 20
HOST_FORMS = "a host name, an IPv4 or IPv6 address, optionally with ':slots' (e.g. node1:4, [fe80::1]:2)"
HOSTFILE_KEYS = ("slots", "max_slots", "max-slots")


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
    return text.isdigit() and text.isascii() and 1 <= int(text) <= MAX_SLOTS


def host_problem(entry: str) -> Optional[str]:
    """Why ``entry`` (``host``, ``host:slots``, ``[v6]:slots`` or a bare IPv6 address) is refused; None if fine."""
    if not isinstance(entry, str):
        return f"{entry!r} is not text; expected {HOST_FORMS}"
    name, slots = entry, None
    if entry.startswith("["):
        close = entry.find("]")
        if close < 0:
            return f"'{entry}' is not a host; expected {HOST_FORMS}"
        name, rest = entry[1:close], entry[close + 1:]
        if rest and not rest.startswith(":"):
            return f"'{entry}' is not a host; expected {HOST_FORMS}"
        slots = rest[1:] if rest else None
        if ":" not in name:
            return f"'{entry}': only IPv6 addresses are written in brackets"
    elif entry.count(":") == 1:
        name, slots = entry.split(":")
    if slots is not None and not _slots(slots):
        return f"'{entry}': the slot count must be a whole number from 1 to {MAX_SLOTS}"
    if not is_host_name(name):
        return f"'{entry}' is not a host name; expected {HOST_FORMS}"
    return None


def check_hosts(entries: List[str]) -> List[Tuple[int, str]]:
    """(index, problem) for each refused entry of a host list."""
    return [(i, p) for i, p in ((i, host_problem(e)) for i, e in enumerate(entries)) if p]


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
