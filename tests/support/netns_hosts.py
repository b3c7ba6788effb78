"""Simulated hosts for multi-host tests: Linux network namespaces joined by a bridge.

Each "host" is a network namespace with its own address on a private /24 and, for every process an
Open MPI daemon starts there, its own UTS hostname (with one hostname Open MPI treats the ranks as one
node and the TCP transport fails). The bridge lives in a namespace of its own, so nothing is added to
this machine's own network; names carry a random token, so two test runs at once do not collide.
An ``rsh`` agent generated into the test's tmp folder replaces ssh: it maps a host's address to its
namespace and runs the daemon there (``OMPI_MCA_plm_rsh_agent``). Needs root (``ip netns``); tests
skip with the reason where namespaces cannot be made. Everything is removed at the end, even when
the test fails: processes in the namespaces are killed and the namespaces deleted.
"""
from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional

import pytest


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check, timeout=20)


def namespaces_unavailable() -> Optional[str]:
    """Why simulated hosts cannot be made here (None when they can)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "network namespaces need root (ip netns add)"
    for tool in ("ip", "unshare", "bash"):
        if not shutil.which(tool):
            return f"'{tool}' is not installed"
    probe = f"nncprobe{secrets.token_hex(3)}"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"cannot create a network namespace: {made.stderr.strip()}"
    veth = _ip("-n", probe, "link", "add", "p0", "type", "veth", "peer", "name", "p1", check=False)
    _ip("netns", "del", probe, check=False)
    if veth.returncode != 0:
        return f"cannot create a veth pair: {veth.stderr.strip()}"
    return None


@dataclass
class SimHost:
    """One simulated host: its namespace (also its hostname), address and veth (inside the namespace)."""

    namespace: str
    address: str
    interface: str


@dataclass
class SimHosts:
    """A set of hosts on one bridge; ``run`` and ``command`` execute in a host as its own processes."""

    token: str
    subnet: str
    agent: str
    hosts: List[SimHost] = field(default_factory=list)
    switch: str = ""

    def host_list(self, slots: int = 1) -> str:
        """``--hosts`` text for all hosts, ``addr:slots`` each."""
        return ",".join(f"{h.address}:{slots}" for h in self.hosts)

    def environment(self) -> Dict[str, str]:
        """The environment a launcher in a host needs: ssh replaced by the namespace agent."""
        return {"PRTE_MCA_plm_ssh_agent": self.agent}

    def command(self, host: SimHost, argv: List[str]) -> List[str]:
        """``argv`` run in ``host``'s namespace with its own hostname."""
        return ["ip", "netns", "exec", host.namespace, "unshare", "--uts", "bash", "-c",
                f'hostname {host.namespace} && exec "$@"', "_", *argv]

    def pids(self, host: SimHost) -> List[int]:
        """Processes running in the host's namespace."""
        out = _ip("netns", "pids", host.namespace, check=False).stdout.split()
        return [int(p) for p in out if p.isdigit()]

    def kill(self, host: SimHost) -> None:
        """The host disappears: every process in it is killed."""
        for pid in self.pids(host):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def link_down(self, host: SimHost) -> None:
        """Unplug the host's cable."""
        _ip("-n", host.namespace, "link", "set", host.interface, "down", check=False)

    def throttle(self, rate: str, burst: str = "256kb") -> None:
        """Limit every host's link (both directions: each veth end) to ``rate`` (e.g. 1gbit) with a token bucket.

        Added latency needs the netem qdisc (kernel module sch_netem), which this machine's kernel lacks."""
        for host in self.hosts:
            for ns, dev in ((host.namespace, host.interface), (self.switch, _bridge_port(self.token, host))):
                subprocess.run(["ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", dev, "root"],
                               capture_output=True, timeout=20)
                args = ["tbf", "rate", rate, "burst", burst, "latency", "50ms"]
                subprocess.run(["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, "root", *args],
                               check=True, capture_output=True, timeout=20)


def _bridge_port(token: str, host: SimHost) -> str:
    return f"b{token}{host.interface[-1]}"


_AGENT = """#!/bin/bash
# rsh agent for simulated hosts: Open MPI calls it as ssh would be ("AGENT [options] HOST COMMAND...").
while [[ "$1" == -* ]]; do shift; done
host="$1"; shift
case "$host" in
{cases}
  *) echo "unknown simulated host: $host" >&2; exit 255;;
esac
exec ip netns exec "$ns" unshare --uts bash -c "hostname $ns && $*"
"""


def make_hosts(folder: str, count: int = 2) -> SimHosts:
    """Create ``count`` hosts joined by a bridge (call ``remove`` afterwards, also on failure)."""
    token = secrets.token_hex(3)
    octets = (200 + secrets.randbelow(50), secrets.randbelow(250))
    subnet = f"10.{octets[0]}.{octets[1]}.0/24"
    agent = os.path.join(folder, f"rsh-agent-{token}.sh")
    sim = SimHosts(token=token, subnet=subnet, agent=agent, switch=f"nnc{token}sw")
    try:
        _ip("netns", "add", sim.switch)
        _ip("-n", sim.switch, "link", "add", f"br{token}", "type", "bridge")
        _ip("-n", sim.switch, "link", "set", f"br{token}", "up")
        for i in range(count):
            host = SimHost(namespace=f"nnc{token}h{i}", address=f"10.{octets[0]}.{octets[1]}.{i + 1}",
                           interface=f"v{token}{i}")
            sim.hosts.append(host)
            _ip("netns", "add", host.namespace)
            port = _bridge_port(token, host)
            _ip("-n", sim.switch, "link", "add", port, "type", "veth", "peer", "name", host.interface,
                "netns", host.namespace)
            _ip("-n", sim.switch, "link", "set", port, "master", f"br{token}")
            _ip("-n", sim.switch, "link", "set", port, "up")
            _ip("-n", host.namespace, "addr", "add", f"{host.address}/24", "dev", host.interface)
            _ip("-n", host.namespace, "link", "set", "lo", "up")
            _ip("-n", host.namespace, "link", "set", host.interface, "up")
        cases = "\n".join(f"  {h.address}|{h.namespace}) ns={h.namespace};;" for h in sim.hosts)
        with open(agent, "w") as fh:
            fh.write(_AGENT.format(cases=cases))
        os.chmod(agent, 0o755)
    except BaseException:
        remove(sim)
        raise
    return sim


def remove(sim: SimHosts) -> None:
    """Kill everything in the hosts and delete their namespaces (never raises)."""
    for host in sim.hosts:
        sim.kill(host)
    deadline = time.monotonic() + 5
    while any(sim.pids(h) for h in sim.hosts) and time.monotonic() < deadline:
        time.sleep(0.05)
    for name in [h.namespace for h in sim.hosts] + [sim.switch]:
        _ip("netns", "del", name, check=False)


def shell(sim: SimHosts, host: SimHost, text: str) -> List[str]:
    """A shell command line run in ``host`` (for quick checks)."""
    return sim.command(host, ["bash", "-c", text])


@pytest.fixture
def sim_hosts(tmp_path) -> Iterator:
    """A factory ``sim_hosts(count)`` of simulated hosts, all removed after the test (skips without namespaces)."""
    reason = namespaces_unavailable()
    if reason:
        pytest.skip(f"simulated hosts unavailable: {reason}")
    made: List[SimHosts] = []

    def factory(count: int = 2) -> SimHosts:
        made.append(make_hosts(str(tmp_path), count))
        return made[-1]

    try:
        yield factory
    finally:
        for sim in made:
            remove(sim)
