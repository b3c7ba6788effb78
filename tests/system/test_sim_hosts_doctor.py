"""``nnconsole doctor --hosts`` between simulated hosts measures the link (bandwidth, latency) and says what a
gradient costs on it; a link throttled with tc (tbf, 100 Mbit/s) shows in the figures."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.support import netns_hosts
from tests.support.paths import ROOT

sim_hosts = netns_hosts.sim_hosts  # the fixture
pytestmark = pytest.mark.mpi


def _doctor(sim) -> tuple:
    env = dict(os.environ, PYTHONPATH=ROOT, NNCONSOLE_MPI_NETWORK=sim.subnet, **sim.environment())
    argv = [sys.executable, "-m", "nnconsole.engine.cli.main", "doctor", "--gpus", "2", "--hosts", sim.host_list()]
    out = subprocess.run(sim.command(sim.hosts[0], argv), capture_output=True, text=True, env=env, cwd=ROOT,
                         timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    found = re.search(r"bus bandwidth ([\d.e+-]+) GB/s, latency (\d+) us per step", out.stdout)
    assert found, out.stdout
    assert "--link" in out.stdout and "gradient all-reduce per iteration across 2 hosts" in out.stdout
    return float(found.group(1)), out.stdout


def test_doctor_hosts_measures_the_link_and_sees_a_throttle(sim_hosts):
    sim = sim_hosts(2)
    fast, text = _doctor(sim)
    assert "ssh " + sim.hosts[1].address + ": reachable" in text  # through the agent Open MPI itself uses
    sim.throttle("100mbit")
    slow, _ = _doctor(sim)
    assert slow < 100e6 / 8 / 1e9 * 1.1  # at most the link's 12.5 MB/s (bus bandwidth, GB/s)
    assert slow < fast / 3
