"""A host that disappears mid-run (processes killed, or its link taken down) ends the job in bounded time with
a message naming it; ``--resume`` on the remaining host finishes the run with nothing lost."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Optional

import pytest

from nnconsole.engine.rundir import store as runs
from nnconsole.engine.launch.host_watch import HostProbe, answers, host_names
from nnconsole.engine.test_seams import SEAMS_VARIABLE, seam_environment
from tests.support import netns_hosts
from tests.support.paths import ROOT
from tests.support.projects import tabular_project

sim_hosts = netns_hosts.sim_hosts  # the fixture
pytestmark = pytest.mark.mpi


# The link_down case waits for the host probe; the seam shortens its 15 s (the product's) to this.
HOST_LOST = 4


def _start(sim, host, *args: str, seams: Optional[dict] = None) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=ROOT, **sim.environment(), **(seams or {}))
    argv = [sys.executable, "-m", "nnconsole.engine.cli.main", "train", "-q", "--network", sim.subnet, *args]
    return subprocess.Popen(sim.command(host, argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=ROOT)


def _wait_for_checkpoint(proc: subprocess.Popen, results: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = runs.list_runs(results) if os.path.isdir(results) else []
        if found and runs.list_checkpoints(found[-1]):
            return found[-1]
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    raise AssertionError("no checkpoint appeared")


@pytest.mark.parametrize("how", ["killed", "link_down"])
def test_a_lost_host_ends_the_job_naming_it_and_resume_finishes_on_the_rest(tmp_path, sim_hosts, how):
    sim = sim_hosts(2)
    epochs = 6
    project = tabular_project(str(tmp_path / "p"), n=1024, batch=8, epochs=epochs, workers=2, monitor=16)
    # Only link_down shortens the probe's patience: a killed host must be caught as before (Open MPI's daemon).
    seams = seam_environment(host_lost_seconds=HOST_LOST) if how == "link_down" else None
    proc = _start(sim, sim.hosts[0], project, "--hosts", sim.host_list(), seams=seams)
    run_dir = _wait_for_checkpoint(proc, str(tmp_path / "p" / "results" / "project"))
    lost = sim.hosts[1]
    if how == "killed":
        sim.kill(lost)
    else:
        sim.link_down(lost)
    start = time.monotonic()
    stdout, stderr = proc.communicate(timeout=90)
    took = time.monotonic() - start
    assert proc.returncode == 1, (stdout, stderr)
    assert took < (40 if how == "killed" else HOST_LOST + 15), took
    # Named by its hostname (Open MPI's lost daemon) or by the address the user gave (no answer).
    assert f"host {lost.namespace} was lost" in stderr or f"host {lost.address} was lost" in stderr, stderr
    status = runs.read_status(run_dir)
    assert status.status == "failed" and status.resumable and "was lost" in status.message
    assert not os.path.exists(os.path.join(run_dir, "parameters_final.h5"))
    before = [r["iteration"] for r in runs.iter_metrics(run_dir, "train")]

    resumed = _start(sim, sim.hosts[0], "--resume", run_dir, "--hosts", f"{sim.hosts[0].address}:1", "--gpus", "1")
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, out + err
    assert runs.read_status(run_dir).status == "finished"
    after = [r["iteration"] for r in runs.iter_metrics(run_dir, "train")]
    assert after[0] == before[0] and after == sorted(set(after))  # the first part's records kept, none twice
    epochs_seen = [r["epoch"] for r in runs.iter_metrics(run_dir, "validation")]
    assert epochs_seen == list(range(1, epochs + 1))  # every epoch once: none lost, none twice


def test_host_probe_names_the_silent_host(monkeypatch):
    from nnconsole.engine.launch import host_watch

    assert answers("127.0.0.1", 9)  # refused is an answer: the machine is there
    monkeypatch.setattr(host_watch, "PROBE_SECONDS", 0.1)
    up = {"nodeA", "nodeB", "filtered"} - {"filtered"}
    monkeypatch.setattr(host_watch, "answers", lambda host, port, timeout: host in up)
    probe = HostProbe(["nodeA", "nodeB", "filtered"], lost_after=1.0)  # "filtered" never answers: never lost
    time.sleep(0.5)
    up.discard("nodeB")  # nodeB answered, then went silent
    try:
        assert probe.lost() is None
        deadline = time.monotonic() + 10
        while probe.lost() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        lost = probe.lost()
        assert lost is not None and lost.host == "nodeB" and "host nodeB was lost" in lost.describe()
    finally:
        probe.close()
    assert HostProbe([], lost_after=1.0).every == 0.1  # probes fit in the silence that counts as lost
    assert host_names(["a:2", "[fe80::1]:2", "10.0.0.1", "fe80::2"]) == ["a", "fe80::1", "10.0.0.1", "fe80::2"]


def test_the_host_lost_bound_is_fifteen_seconds_unless_a_test_shortens_it(monkeypatch):
    from nnconsole.engine.launch import host_watch

    monkeypatch.delenv(SEAMS_VARIABLE, raising=False)
    probe = HostProbe([])
    assert (probe.lost_after, probe.every) == (host_watch.HOST_LOST_SECONDS, host_watch.PROBE_SECONDS) == (15, 2)
    monkeypatch.setenv(SEAMS_VARIABLE, '{"host_lost_seconds": 4}')
    probe = HostProbe([])
    assert (probe.lost_after, probe.every) == (4, 1)
