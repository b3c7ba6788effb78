"""Issue 31: a run that fails while its training set's cache build still goes on behind the first epoch ends
with its failure at once. The build (a non-daemon thread the process waits for at exit) is asked to stop, ends at
its next chunk, and leaves its build folder for the next run to resume; that run trains the parameters a warm run
trains. Without the stop request the failure came only once the build had decoded every file."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.data import cache_build
from nnconsole.engine.errors import ExitCode
from nnconsole.engine.launch.launcher import LaunchRequest, prepare_run
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.protocol import read_error_records
from nnconsole.engine.test_seams import SEAMS_VARIABLE
from nnconsole.engine.train import worker
from tests.support.datasets import cache_entries
from tests.support.image_projects import cycled_image_project, write_cycled_csv
from tests.support.paths import ROOT
from tests.support.training import final_params, results_of, train_file_in_process

BUILD_THREAD = "dataset-cache-build"  # build_overlap.finish_in_background's thread


def _training_builds(run_dir: str) -> list:
    return [r for r in runs.iter_metrics(run_dir, None) if r.get("type") == "dataset_cache"
            and r.get("dataset") == "training"]


def _partials(project: str) -> list:
    return list((Path(project).parent / ".nnconsole-cache").glob(".*.partial/progress.json"))


def _project(folder: Path, files: int, batch: int) -> str:
    """One epoch over ``files`` distinct files, one row each; its validation set names 4 of them (decoded before
    training starts, while the training set's build goes on)."""
    project = cycled_image_project(str(folder), rows=files, files=files, epochs=1, batch=batch)
    write_cycled_csv(folder, "valid.csv", rows=8, files=4)
    return project


def _resumed_then_warm(tmp_path: Path, project: str) -> None:
    """Train ``project`` again (it resumes the stopped build), then once more on the finished cache; both end with
    the same parameters, bit for bit."""
    resumed = train_file_in_process(project)
    builds = _training_builds(resumed)
    assert builds and builds[0]["done"] > 0, f"the next run built the cache from scratch: {builds}"
    assert builds[-1]["done"] == builds[-1]["total"]
    shutil.move(results_of(project), str(tmp_path / "resumed_results"))
    warm = train_file_in_process(project)
    assert not [r for r in _training_builds(warm) if r["done"] < r["total"]], "the warm run built again"
    a = final_params(str(tmp_path / "resumed_results" / Path(resumed).name))
    b = final_params(warm)
    assert sorted(a) == sorted(b)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def test_a_worker_failing_during_the_overlapped_build_stops_the_build_at_once(tmp_path, monkeypatch):
    """The worker's entry (``worker.main``) in this process: it fails at iteration 1 (test seam) while 100 files in
    chunks of 4 are decoded at 40 ms each (4 s); the build thread ends within a second of the failure, the error
    record names it, and the build folder is resumed by the next run."""
    monkeypatch.setattr(cache_build, "CHUNK", 4)
    monkeypatch.setenv(SEAMS_VARIABLE, json.dumps({"decode_delay_ms": 40, "fail_at_iteration": 1}))
    monkeypatch.setenv("NNABLA_LOG_LEVEL", "WARNING")  # what worker.main sets, undone after the test
    project = _project(tmp_path / "p", files=100, batch=8)
    run_dir = prepare_run(load_valid_project(project), LaunchRequest(output=results_of(project)), workers=1)
    assert worker.main([run_dir]) == ExitCode.FAILED
    failed = time.monotonic()
    for thread in [t for t in threading.enumerate() if t.name == BUILD_THREAD]:
        thread.join(timeout=60)
    took = time.monotonic() - failed
    assert took < 0.5 * 100 * 0.040, f"the build went on {took:.2f} s after the failure (the whole build: 4 s)"
    (record,) = read_error_records(run_dir)
    assert record["type"] == "RuntimeError" and "deliberate failure at iteration 1" in record["message"]
    progress = _partials(project)
    assert progress, "the build folder was not kept for resuming"
    done = json.loads(progress[0].read_text())
    left = done["total"] - done["count"]
    assert left >= 40, f"the build was nearly done when the run failed ({done['count']} of {done['total']})"
    # the rest of the build alone takes left x 40 ms (>= 1.6 s); the stop ends it at its next chunk (0.16 s)
    assert took < 0.5 * left * 0.040, f"the build went on {took:.2f} s after the failure ({left} files left)"
    assert not [e for e in cache_entries(Path(project).parent / ".nnconsole-cache") if e.name.startswith("train-")], \
        "a stopped build was put in place"
    monkeypatch.delenv(SEAMS_VARIABLE)
    _resumed_then_warm(tmp_path, project)


@pytest.mark.slow
def test_nnconsole_train_failing_during_the_cache_build_reports_the_failure_without_waiting_for_the_build(tmp_path):
    """The real CLI: 1,536 distinct files (6 chunks of 256) decoded at 20 ms each (31 s); the run fails at iteration
    1, once the first chunk is written. ``nnconsole train`` exits FAILED with the error in the run's status
    well before the build could have ended, and the next run resumes the build."""
    project = _project(tmp_path / "p", files=1536, batch=32)
    env = dict(os.environ, PYTHONPATH=ROOT, **{SEAMS_VARIABLE: json.dumps({"decode_delay_ms": 20,
                                                                             "fail_at_iteration": 1})})
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "nnconsole.engine.cli.main", "train", project, "-q"],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    ended = time.time()
    took = time.monotonic() - started
    assert proc.returncode == ExitCode.FAILED, (proc.stdout, proc.stderr)
    (run_dir,) = runs.list_runs(results_of(project))
    status = runs.read_status(run_dir)
    assert status.status == "failed" and "deliberate failure at iteration 1" in status.message, status
    (record,) = read_error_records(run_dir)
    after_failure = ended - record["time"]
    progress = _partials(project)
    assert progress, "the build folder was not kept for resuming"
    done = json.loads(progress[0].read_text())
    left = done["total"] - done["count"]
    assert left >= 3 * 256, f"the build was nearly done when the run failed ({done['count']} of {done['total']})"
    # the rest of the build alone takes left x 20 ms (>= 15 s); the stop ends it at its next chunk (<= 5 s)
    assert after_failure < 0.5 * left * 0.020, (
        f"the run ended {after_failure:.1f} s after its failure ({took:.1f} s in all; {left} files were left)")
    _resumed_then_warm(tmp_path, project)
