"""``train --resume RUN`` goes on with the worker count and hosts the run was started with (launch.json), unless
the command line gives others, and says so (issue 25 item 5): a run started with ``--gpus 2`` on a project of
``workers: 1`` used to resume on 1 worker, halving the logical batch and the learning rate."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from nnconsole.engine.launch.launcher import LaunchError, LaunchRequest, launch_layout
from nnconsole.engine.project.model import Project
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.launch_options import WorkerOptions
from nnconsole.engine.test_seams import seam_environment
from tests.support.cli import nnconsole
from tests.support.paths import ROOT
from tests.support.projects import tabular_project


def _project(workers: int = 1, hosts=()) -> Project:
    project = Project(name="p")
    project.multi_gpu.workers = workers
    project.multi_gpu.hosts = list(hosts)
    return project


def test_a_resume_keeps_the_runs_workers_and_hosts_and_says_so(tmp_path):
    WorkerOptions(workers=4, hosts=["node1:2", "node2:2"]).write(str(tmp_path))
    workers, hosts, hostfile, note = launch_layout(LaunchRequest(resume_dir=str(tmp_path)), _project(1))
    assert (workers, hosts, hostfile) == (4, ["node1:2", "node2:2"], "")
    assert note == ("resumed as the run was started: 4 workers (--gpus N to change) and hosts node1:2,node2:2 "
                    "(--hosts or --hostfile to change)")


def test_the_command_line_overrides_what_the_run_recorded(tmp_path):
    WorkerOptions(workers=4, hosts=["node1:2", "node2:2"]).write(str(tmp_path))
    request = LaunchRequest(resume_dir=str(tmp_path), workers=2, hosts=["a:1", "b:1"])
    assert launch_layout(request, _project(1)) == (2, ["a:1", "b:1"], "", "")
    request = LaunchRequest(resume_dir=str(tmp_path), workers=3)
    workers, hosts, _, note = launch_layout(request, _project(1))
    assert (workers, hosts) == (3, ["node1:2", "node2:2"]) and "workers" not in note and "hosts node1:2" in note


def test_a_new_run_and_a_run_without_launch_json_use_the_project(tmp_path):
    workers, hosts, hostfile, note = launch_layout(LaunchRequest(), _project(2, ["x:2"]))
    assert (workers, hosts, hostfile) == (2, ["x:2"], "") and "one per slot of the hosts x:2" in note
    assert launch_layout(LaunchRequest(resume_dir=str(tmp_path)), _project(2)) == (2, [], "", "")


def test_a_recorded_host_shaped_like_an_ssh_option_is_refused(tmp_path):
    WorkerOptions(workers=2, hosts=["-oProxyCommand=touch /tmp/x"]).write(str(tmp_path))
    with pytest.raises(LaunchError, match="launch.json"):
        launch_layout(LaunchRequest(resume_dir=str(tmp_path)), _project(1))


PAUSE_AT = 6  # mid-epoch for 2 workers (4 iterations an epoch of 64 samples at batch 8 per worker)


@pytest.mark.mpi
@pytest.mark.slow
def test_a_run_started_with_two_workers_resumes_with_two(tmp_path):
    project = tabular_project(str(tmp_path / "p"), n=64, batch=8, epochs=3, workers=1, monitor=2)  # the file says 1
    env = dict(os.environ, PYTHONPATH=ROOT, **seam_environment(pause_at_iteration=PAUSE_AT))
    proc = subprocess.Popen([sys.executable, "-m", "nnconsole.engine.cli.main", "train", project, "-q", "--gpus", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    results = str(tmp_path / "p" / "results" / "project")
    deadline, run_dir = time.monotonic() + 90, None
    while run_dir is None:
        found = runs.list_runs(results)
        if found and any(r["iteration"] >= PAUSE_AT for r in runs.iter_metrics(found[-1], "train")):
            run_dir = found[-1]
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no training records appeared"
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode == 3 and runs.read_status(run_dir).workers == 2
    out = nnconsole(["train", "--resume", run_dir], timeout=120, env=seam_environment(pause_at_iteration=PAUSE_AT + 1))
    assert "resumed as the run was started: 2 workers (--gpus N to change)" in out.stdout
    assert "plan: 2 worker(s)" in out.stdout
    plan = json.load(open(os.path.join(run_dir, "plan.json")))
    assert plan["workers"] == 2 and plan["logical_batch"] == 16
    status = runs.read_status(run_dir)
    assert status.status == "finished" and status.workers == 2
