"""``nnconsole train --hosts A:1,B:1`` over real TCP between simulated hosts (network namespaces,
tests/support/netns_hosts.py)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from nnconsole.engine.plan.hosts import network_problem
from nnconsole.engine.launch.launcher import LaunchError, worker_command
from tests.support.cli import run_dir_from
from tests.support.paths import ROOT
from tests.support.projects import tabular_project
from tests.support.training import final_params, max_relative_error
from tests.support import netns_hosts
from tests.support.netns_hosts import SimHosts

sim_hosts = netns_hosts.sim_hosts  # the fixture

pytestmark = pytest.mark.mpi


def train_on_hosts(sim: SimHosts, project: str, *extra: str, timeout: float = 90) -> subprocess.CompletedProcess:
    """``nnconsole train`` started on the first simulated host, its ranks spread over all of them."""
    env = dict(os.environ, PYTHONPATH=ROOT, **sim.environment())
    argv = [sys.executable, "-m", "nnconsole.engine.cli.main", "train", project, "-q", "--hosts", sim.host_list(),
            "--network", sim.subnet, *extra]
    return subprocess.run(sim.command(sim.hosts[0], argv), capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=timeout)


def local_train(project: str) -> str:
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-m", "nnconsole.engine.cli.main", "train", project, "-q"], capture_output=True,
                         text=True, env=env, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    return run_dir_from(out.stdout)


def test_network_option_reaches_mpiexec_only_for_several_hosts(monkeypatch):
    cmd = worker_command("/r", 2, hosts=["10.0.0.1:1", "10.0.0.2:1"], network="10.0.0.0/24")
    assert cmd[cmd.index("btl_tcp_if_include") + 1] == "10.0.0.0/24"
    assert cmd[cmd.index("oob_tcp_if_include") + 1] == "10.0.0.0/24"
    assert "btl_tcp_if_include" not in worker_command("/r", 2, network="10.0.0.0/24")  # one machine: shared memory
    monkeypatch.setenv("NNCONSOLE_MPI_NETWORK", "eth1")
    cmd = worker_command("/r", 2, hosts=["a", "b"])
    assert cmd[cmd.index("btl_tcp_if_include") + 1] == "eth1"
    with pytest.raises(LaunchError, match="NNCONSOLE_MPI_NETWORK"):
        worker_command("/r", 2, hosts=["a", "b"], network="-oProxyCommand=x")
    assert network_problem("10.0.0.0/24,eth0") is None and network_problem("10.0.0.300/24")
    assert network_problem("") and network_problem("eth0;rm")


def test_two_hosts_train_over_tcp_and_match_one_host(tmp_path, sim_hosts):
    sim = sim_hosts(2)
    kwargs = dict(n=64, epochs=6, lr=0.2, scaling="none")
    project = tabular_project(str(tmp_path / "hosts"), batch=8, workers=2, **kwargs)
    out = train_on_hosts(sim, project)
    assert out.returncode == 0, out.stdout + out.stderr
    run_dir = run_dir_from(out.stdout)
    logs = os.path.join(run_dir, "logs")
    # Each rank is alone on its host: Open MPI saw two nodes (local rank 0 on both), so the gradients crossed TCP.
    assert "rank 1 of 2 (local rank 0)" in open(os.path.join(logs, "rank1.log")).read()
    assert "btl_tcp_if_include" in open(os.path.join(logs, "launcher.log")).read()
    # multi_gpu.allreduce_overlap (default on) overlaps the all-reduce with backward across hosts only.
    assert "communicator mpi-cpu, overlapped with backward" in open(os.path.join(logs, "rank0.log")).read()

    # Equivalence: 2 hosts x 1 worker == 1 host x 2 workers == 1 worker with the same logical batch (16),
    # with tests/system/test_multiworker.py's tolerance.
    hosts = final_params(run_dir)
    local_run = local_train(tabular_project(str(tmp_path / "local2"), batch=8, workers=2, **kwargs))
    assert "overlapped" not in open(os.path.join(local_run, "logs", "rank0.log")).read()  # one host: plain
    two_local = final_params(local_run)
    one = final_params(local_train(tabular_project(str(tmp_path / "one"), batch=16, workers=1, **kwargs)))
    assert max_relative_error(one, hosts) <= 1e-5
    assert max_relative_error(two_local, hosts) <= 1e-5


def test_harness_skips_without_root_and_leaves_nothing_behind(tmp_path, monkeypatch, sim_hosts):
    sim = sim_hosts(3)
    names = [h.namespace for h in sim.hosts] + [sim.switch]
    # Host 0 reaches host 2 over TCP through the bridge.
    serve = "import socket; s=socket.socket(); s.bind(('', 5999)); s.listen(); print('ready', flush=True); " \
            "c, _ = s.accept(); c.sendall(b'hello')"
    server = subprocess.Popen(sim.command(sim.hosts[2], [sys.executable, "-c", serve]), stdout=subprocess.PIPE,
                              text=True)
    assert server.stdout.readline().strip() == "ready"
    fetch = f"import socket; print(socket.create_connection(('{sim.hosts[2].address}', 5999), 5).recv(5).decode())"
    got = subprocess.run(sim.command(sim.hosts[0], [sys.executable, "-c", fetch]), capture_output=True, text=True,
                         timeout=20)
    assert got.stdout.strip() == "hello", got.stderr
    server.wait(timeout=10)
    assert os.uname().nodename not in subprocess.run(sim.command(sim.hosts[1], ["hostname"]), capture_output=True,
                                                      text=True).stdout
    sleeper = subprocess.Popen(sim.command(sim.hosts[1], ["sleep", "300"]))
    netns_hosts.remove(sim)  # what the fixture does after a test, passed or failed
    assert sleeper.wait(timeout=10) != 0
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not [n for n in names if n in listed]
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert "root" in netns_hosts.namespaces_unavailable()
