"""Issue 25, item 14 end to end: Ctrl-C or SIGTERM to ``nnconsole train`` while the dataset cache is built ends
the run within seconds (exit status 3, stopped), and training the project again resumes the build."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nnconsole.engine.rundir import store as runs
from nnconsole.engine.test_seams import SEAMS_VARIABLE

ROOT = Path(__file__).resolve().parents[3]
DIGITS = ROOT / "project_templates" / "digits_cnn"


def cache_records(run_dir: str) -> list:
    out = []
    with open(os.path.join(run_dir, "metrics.jsonl"), encoding="utf-8") as fh:
        for line in fh:
            record = json.loads(line)
            if record.get("type") == "dataset_cache" and record.get("dataset") == "training":
                out.append(record)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_the_cache_build_stops_the_run_within_seconds_and_the_build_resumes(tmp_path, sig):
    project = tmp_path / "digits"
    shutil.copytree(DIGITS, project, ignore=shutil.ignore_patterns(".nnconsole-cache"))
    env = dict(os.environ, PYTHONPATH=str(ROOT), **{SEAMS_VARIABLE: json.dumps({"decode_delay_ms": 15})})
    proc = subprocess.Popen([sys.executable, "-m", "nnconsole.engine.cli.main", "train", str(project / "project.yaml"),
                             "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(ROOT))
    cache = project / "data" / ".nnconsole-cache"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        progress = list(cache.glob(".*.partial/progress.json"))
        try:
            if progress and json.loads(progress[0].read_text()).get("done"):
                break
        except ValueError:
            pass
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()
    signalled = time.monotonic()
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=60)
    took = time.monotonic() - signalled
    assert proc.returncode == 3, (stdout, stderr)
    assert took < 15, f"the run took {took:.1f} s to stop during the cache build"
    (run_dir,) = runs.list_runs(str(project / "results" / "project"))
    assert runs.read_status(run_dir).status == "stopped"
    # before the first iteration the launcher says the cache build stopped; once the first epoch trains on the
    # chunks already built (data.build_overlap), the run stops at an iteration with a checkpoint to resume from
    assert "dataset cache" in stdout + stderr or "--resume" in stdout + stderr
    assert list(cache.glob(".*.partial/progress.json")), "the build folder was not kept for resuming"
    again = subprocess.run([sys.executable, "-m", "nnconsole.engine.cli.main", "train", str(project / "project.yaml"),
                            "-q", "--epochs", "1"], capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=str(ROOT))
    assert again.returncode == 0, again.stderr
    second = [r for r in runs.list_runs(str(project / "results" / "project")) if r != run_dir][0]
    assert cache_records(second)[0]["done"] > 0, "the second run built the cache from scratch"
