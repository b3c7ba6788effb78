"""The search loop on Optuna with a fake trial runner (no training): the same seed gives the same trials, a
pruned trial is recorded as pruned, two processes share one SQLite study without duplicates, and a search
killed with SIGKILL resumes with every trial run exactly once (issue 29)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

from optuna.trial import TrialState

from nnconsole.engine.errors import ExitCode
from nnconsole.engine.search.runner import run_search, slot_request
from nnconsole.engine.search.study import NOT_COUNTED, counted
from tests.support.paths import ROOT
from tests.support.search_fakes import FakeRunner, fake_job

SCRIPT = os.path.join(ROOT, "tests", "support", "search_fakes.py")
PARAMS = ("optimizer.learning_rate", "config.batch_size", "layers.fc1.out_shape")


def _sequence(study) -> list:
    return [tuple(t.params[k] for k in PARAMS) for t in sorted(study.get_trials(), key=lambda t: t.number)]


def test_same_seed_and_storage_give_the_same_sequence_of_trials(tmp_path):
    runs = []
    for name in ("a", "b", "c"):
        job = fake_job(f"sqlite:///{tmp_path / name}.db", trials=8, seed=7 if name != "c" else 8)
        assert run_search(job, say=lambda line: None, runner=FakeRunner()) == 0
        runs.append(_sequence(job.study))
    assert len(runs[0]) == 8 and len(set(runs[0])) == 8
    assert runs[0] == runs[1]  # same seed: the same trials, in the same order
    assert runs[0] != runs[2]  # another seed: others


def test_a_pruned_trial_is_marked_pruned_and_stopped(tmp_path):
    runner = FakeRunner(epochs=6)
    job = fake_job(f"sqlite:///{tmp_path / 'p.db'}", trials=14, pruner="median")
    run_search(job, say=lambda line: None, runner=runner)
    trials = job.study.get_trials()
    pruned = sorted(t.number for t in trials if t.state == TrialState.PRUNED)
    assert pruned and pruned == sorted(runner.pruned)  # exactly the trials the pruner stopped
    for t in trials:
        if t.state == TrialState.PRUNED:
            assert len(t.intermediate_values) < 6  # stopped before its last epoch
    assert counted(job.study) == 14


def _start(storage: str, trials: int, seconds: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, SCRIPT, storage, str(trials), str(seconds)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_two_search_processes_share_one_sqlite_study_without_duplicates(tmp_path):
    storage = f"sqlite:///{tmp_path / 'shared.db'}"
    procs = [_start(storage, 10, 0.05) for _ in range(2)]
    outs = [p.communicate(timeout=240)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    study = fake_job(storage, 10, pruner="none").study
    done = [t for t in study.get_trials() if t.state == TrialState.COMPLETE]
    assert len(done) == 10, outs
    assert len({t.number for t in done}) == 10
    assert len({tuple(t.params[k] for k in PARAMS) for t in done}) == 10  # no trial drawn twice
    pids = {t.user_attrs["pid"] for t in done}
    assert pids == {p.pid for p in procs}  # both processes ran trials of the one study


def test_a_killed_search_resumes_with_every_trial_exactly_once(tmp_path):
    storage = f"sqlite:///{tmp_path / 'killed.db'}"
    proc = _start(storage, 6, 0.3)
    deadline = time.time() + 120
    while time.time() < deadline:  # kill it in the middle of a trial, after at least two finished
        line = proc.stdout.readline()
        if line.startswith("trial 2 complete"):
            break
    time.sleep(0.4)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    study = fake_job(storage, 6, pruner="none").study  # fake_job repairs the study as 'nnconsole search' does on start
    interrupted = [t for t in study.get_trials() if t.state == TrialState.FAIL]
    assert len(interrupted) == 1 and interrupted[0].user_attrs.get(NOT_COUNTED)
    job = fake_job(storage, 6, pruner="none")
    assert run_search(job, say=lambda line: None, runner=FakeRunner(seconds=0.0)) == 0
    trials = job.study.get_trials()
    done = [t for t in trials if t.state == TrialState.COMPLETE]
    assert len(done) == 6
    assert len({tuple(t.params[k] for k in PARAMS) for t in done}) == 6
    again = [t for t in done if t.user_attrs.get("rerun_of") == interrupted[0].number]
    # The interrupted trial ran again, once, with every value it had drawn. A kill between two of its draws (the
    # sampler suggests one parameter at a time) leaves it fewer values than a trial has; the rerun draws the rest.
    assert len(again) == 1 and again[0].params.items() >= interrupted[0].params.items()
    assert not [t for t in trials if t.state == TrialState.RUNNING]


def test_a_stopped_search_leaves_no_running_trial_and_resumes_them(tmp_path):
    storage = f"sqlite:///{tmp_path / 'stop.db'}"
    job = fake_job(storage, 6, parallel=2, pruner="none")
    stop = threading.Event()
    lines = []

    def say(line: str) -> None:
        lines.append(line)
        if "trial 0 complete" in line:
            stop.set()  # as Ctrl-C does: the running trials are asked to stop

    # trial 1 runs 10x longer than trial 0, so it is surely running when the stop comes
    assert run_search(job, say=say, stop=stop, runner=FakeRunner(seconds=0.2, slower={1: 10})) == ExitCode.STOPPED
    trials = job.study.get_trials()
    assert not [t for t in trials if t.state == TrialState.RUNNING]
    given_back = [t for t in trials if t.state == TrialState.FAIL]
    assert given_back and all(t.user_attrs.get(NOT_COUNTED) for t in given_back)
    assert any("will run again on resume" in line for line in lines)
    resumed = fake_job(storage, 6, parallel=2, pruner="none")
    assert run_search(resumed, say=lambda line: None, runner=FakeRunner()) == 0
    done = [t for t in resumed.study.get_trials() if t.state == TrialState.COMPLETE]
    assert len(done) == 6 and len({tuple(t.params[k] for k in PARAMS) for t in done}) == 6
    for t in given_back:
        assert sum(1 for d in done if d.params == t.params) == 1


def test_a_trial_that_breaks_fails_alone_and_the_search_goes_on(tmp_path):
    fake = FakeRunner()

    def runner(request, number, *rest, **options):
        if number == 1:
            raise OSError(28, "No space left on device")
        return fake(request, number, *rest, **options)

    job = fake_job(f"sqlite:///{tmp_path / 'broken.db'}", trials=5, pruner="none")
    lines = []
    assert run_search(job, say=lines.append, runner=runner) == 0
    states = {t.number: t.state for t in job.study.get_trials()}
    assert states[1] == TrialState.FAIL and list(states.values()).count(TrialState.COMPLETE) == 4
    assert "No space left" in job.study.trials[1].user_attrs["failed_because"]
    assert any(line.startswith("trial 1 failed: OSError") for line in lines)


def test_each_trial_slot_has_its_own_gpus(tmp_path):
    job = fake_job(f"sqlite:///{tmp_path / 'g.db'}", trials=1)
    job.request.workers, job.gpus = 2, 4
    assert [slot_request(job, k).cuda_devices for k in (0, 1)] == ["0,1", "2,3"]
    job.gpus = 0
    assert slot_request(job, 1).cuda_devices == ""  # CPU processes: nothing to share out
