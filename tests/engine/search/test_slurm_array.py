"""Issue 29, a search under Slurm as a job array: ``nnconsole search PROJECT --slurm-array N`` writes (never
submits) an sbatch script whose tasks each run ``nnconsole search`` on the one storage and study; SQLite is
refused when the tasks may run on several nodes; and the script, run as two array tasks on this machine
(SLURM_ARRAY_TASK_ID set, no Slurm), shares one SQLite study: the budget spent exactly, no trial twice."""
from __future__ import annotations

import json
import os
import socket
import subprocess

import pytest
from optuna.trial import TrialState

from nnconsole.engine.project.io import load_project
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.search.runner import slot_request
from nnconsole.engine.search.study import open_study
from tests.support.cli import nnconsole
from tests.support.projects import digits_search_copy
from tests.support.paths import ROOT
from tests.support.search_fakes import fake_job

POSTGRES = "postgresql://search@db.example/optuna"


def test_sqlite_on_an_array_that_may_span_nodes_is_refused(tmp_path):
    project = digits_search_copy(tmp_path)
    out = nnconsole(["search", project, "--slurm-array", "4", "--device", "cpu"], check=False)
    assert out.returncode == 2, out
    assert "SQLite" in out.stderr and "NFS" in out.stderr and "PostgreSQL" in out.stderr, out.stderr
    assert "--slurm-node" in out.stderr
    assert not os.path.exists(runs.results_root(project))  # refused before anything was made


def test_the_script_runs_each_task_on_the_one_study_with_the_whole_budget(tmp_path):
    project = digits_search_copy(tmp_path)
    script = str(tmp_path / "array.sbatch")
    out = nnconsole(["search", project, "--slurm-array", "4", "--storage", POSTGRES, "--study", "digits",
                     "--trials", "30", "--parallel", "2", "--workers-per-trial", "1", "--device", "cpu",
                     "--slurm-time", "04:00:00", "--slurm-option=--partition=batch", "--script", script]).stdout
    assert f"sbatch {script}" in out
    text = open(script).read()
    for line in ("#SBATCH --array=0-3", "#SBATCH --nodes=1", "#SBATCH --ntasks=2", "#SBATCH --time=04:00:00",
                 "#SBATCH --partition=batch"):
        assert line + "\n" in text, text
    assert "--nodelist" not in text and "--gpus-per-node" not in text  # CPU, any node (PostgreSQL)
    command = text.strip().splitlines()[-1]
    assert command.startswith("exec ") and f"search {project} " in command
    for part in (f"--storage {POSTGRES}", "--study digits", "--trials 30", "--parallel 2", "--workers-per-trial 1",
                 "--epochs 5", "--device cpu"):
        assert part in command, command
    again = nnconsole(["search", project, "--slurm-array", "4", "--storage", POSTGRES, "--script", script],
                      check=False)
    assert again.returncode == 2 and "exists" in again.stderr  # a script of the user's is never overwritten
    bad = nnconsole(["search", project, "--slurm-array", "2", "--storage", POSTGRES,
                     "--slurm-option", "--partition=x\nrm -rf /"], check=False)
    assert bad.returncode == 2 and "--slurm-option" in bad.stderr  # nothing but one word per #SBATCH line


def test_the_script_refuses_to_run_outside_an_array(tmp_path):
    project = digits_search_copy(tmp_path)
    script = str(tmp_path / "a.sbatch")
    nnconsole(["search", project, "--slurm-array", "2", "--storage", POSTGRES, "--script", script])
    env = {k: v for k, v in os.environ.items() if k != "SLURM_ARRAY_TASK_ID"}
    out = subprocess.run(["bash", script], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode != 0 and "run this script with sbatch" in out.stderr


def test_each_trial_slot_takes_its_gpus_from_the_ones_slurm_gave(tmp_path, monkeypatch):
    job = fake_job(f"sqlite:///{tmp_path / 'g.db'}", trials=1)
    job.request.workers, job.gpus = 2, 4
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6,7")  # the job's GPUs on a shared node
    assert [slot_request(job, k).cuda_devices for k in (0, 1)] == ["4,5", "6,7"]
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert [slot_request(job, k).cuda_devices for k in (0, 1)] == ["0,1", "2,3"]


@pytest.mark.slow
def test_two_array_tasks_share_one_sqlite_study_and_the_budget(tmp_path):
    trials = 4
    project = digits_search_copy(tmp_path, pruner="none", params=[
        {"target": "optimizer.learning_rate", "kind": "log_float", "low": 1e-4, "high": 1e-1}])
    script = str(tmp_path / "array.sbatch")
    nnconsole(["search", project, "--slurm-array", "2", "--slurm-node", socket.gethostname(), "--trials",
               str(trials), "--epochs", "1", "--device", "cpu", "--script", script])
    env = dict(os.environ, PYTHONPATH=ROOT)
    tasks = [subprocess.Popen(["bash", script], env=dict(env, SLURM_ARRAY_TASK_ID=str(k), SLURM_ARRAY_JOB_ID="7"),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=str(tmp_path))
             for k in range(2)]
    outs = [t.communicate(timeout=600)[0] for t in tasks]
    assert [t.returncode for t in tasks] == [0, 0], outs
    study = open_study("sqlite:///" + os.path.join(runs.results_root(project), "search.db"), "digits_search",
                       load_project(project).search)
    all_trials = study.get_trials()
    done = [t for t in all_trials if t.state == TrialState.COMPLETE]
    assert len(done) == trials, outs  # the budget, not a budget per task
    assert not [t for t in all_trials if t.state in (TrialState.RUNNING, TrialState.WAITING)]
    assert len({json.dumps(t.params, sort_keys=True) for t in done}) == trials  # no trial twice
    assert {t.user_attrs["pid"] for t in done} == {t.pid for t in tasks}  # both tasks trained trials
    assert len({t.user_attrs["run_dir"] for t in done}) == trials
    assert all(f"array task {k} of 2" in outs[k] for k in range(2))
