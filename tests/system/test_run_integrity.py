"""One run directory, one writer, one clean history.

- Two ``train --resume`` of one run at once: the second is refused (exit 2, naming the run and
  the holder's PID) and writes nothing; a killed or suspended launcher leaves no lock behind.
- After kill -9 (and a damaged newest checkpoint) + resume, ``metrics.jsonl`` reads as one run:
  one validation record per epoch, iterations strictly increasing, the kept part byte-identical.
- The metrics reader survives a torn last line and stray lines.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.protocol import METRICS_FILE
from nnconsole.engine.test_seams import seam_environment
from tests.support.cli import nnconsole, run_dir_from
from tests.support.paths import ROOT
from tests.support.processes import live_processes, wait_until_gone
from tests.support.projects import tabular_project

ENV = dict(os.environ, PYTHONPATH=ROOT)
EPOCHS = 16
SETTINGS = dict(n=1024, batch=16, epochs=EPOCHS, solver="Momentum", lr=0.05, monitor=16)  # 64 iterations/epoch


@pytest.fixture(scope="module")
def failed_once(tmp_path_factory) -> str:
    """A run that failed (a rank raised) at iteration 200, with checkpoints of the epochs before."""
    project = tabular_project(str(tmp_path_factory.mktemp("failed") / "p"), **SETTINGS)
    out = nnconsole(["train", project, "-q"], check=False, env=seam_environment(fail_at_iteration=200))
    assert out.returncode == 1, out.stderr
    run_dir = run_dir_from(out.stdout)
    assert runs.list_checkpoints(run_dir)
    return run_dir


@pytest.fixture
def failed_run(failed_once, tmp_path) -> str:
    """A fresh copy of that failed run for one test (its project.yaml names the data by absolute path)."""
    copy = str(tmp_path / "run")
    shutil.copytree(failed_once, copy)
    return copy


def resume_cmd(run_dir: str) -> list:
    return [sys.executable, "-m", "nnconsole.engine.cli.main", "train", "--resume", run_dir, "-q"]


def metrics_bytes(run_dir: str) -> bytes:
    with open(os.path.join(run_dir, METRICS_FILE), "rb") as fh:
        return fh.read()


def assert_one_clean_history(run_dir: str, epochs: int = EPOCHS) -> None:
    """Every line is a record; one validation record per epoch in order; iterations strictly increase."""
    lines = metrics_bytes(run_dir).split(b"\n")
    assert lines[-1] == b"", "the file ends with a complete line"
    records = [json.loads(line) for line in lines[:-1]]  # raises on a torn or merged line
    validation = [r["epoch"] for r in records if r["type"] == "validation"]
    assert validation == list(range(1, epochs + 1)), validation
    for kind in ("train", "validation"):
        its = [r["iteration"] for r in records if r["type"] == kind]
        assert all(a < b for a, b in zip(its, its[1:])), f"{kind} iterations not strictly increasing: {its}"


# ---- one writer ---------------------------------------------------------------------------------------
HOLDER = """
import sys, time
from nnconsole.engine.rundir.lock import RunLock
RunLock(sys.argv[1]).acquire()
print("held", flush=True)
time.sleep(120)
"""


@pytest.mark.slow
def test_a_resume_is_refused_while_another_process_holds_the_run(failed_run):
    run_dir = failed_run
    before_metrics, before_status = metrics_bytes(run_dir), runs.read_status(run_dir)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, run_dir], stdout=subprocess.PIPE, text=True, env=ENV,
                              cwd=ROOT)
    try:
        assert holder.stdout.readline().strip() == "held"
        out = nnconsole(["train", "--resume", run_dir, "-q"], check=False)
    finally:
        holder.kill()
        holder.wait()
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert run_dir in out.stderr and f"pid {holder.pid}" in out.stderr and "Traceback" not in out.stderr
    assert metrics_bytes(run_dir) == before_metrics
    assert runs.read_status(run_dir) == before_status
    # The holder is gone (killed): its lock went with it.
    done = nnconsole(["train", "--resume", run_dir, "-q"])
    assert done.returncode == 0
    assert_one_clean_history(run_dir)


@pytest.mark.slow
def test_two_resumes_at_once_one_trains_the_other_is_refused(failed_run):
    run_dir = failed_run
    epochs = 2 * EPOCHS  # the winner trains for seconds: the other cannot start after it ended, even under load
    procs = [subprocess.Popen(resume_cmd(run_dir) + ["--epochs", str(epochs)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=ENV, cwd=ROOT) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 2], (codes, outs)
    refused = next(err for p, (_, err) in zip(procs, outs) if p.returncode == 2)
    winner = next(p for p in procs if p.returncode == 0)
    assert f"pid {winner.pid}" in refused and run_dir in refused and "Traceback" not in refused
    assert runs.read_status(run_dir).status == "finished"
    assert_one_clean_history(run_dir, epochs)


@pytest.mark.slow
def test_a_suspended_launcher_keeps_the_run_and_a_killed_one_frees_it(failed_run):
    run_dir = failed_run
    first = subprocess.Popen(resume_cmd(run_dir) + ["--epochs", "400"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, env=ENV, cwd=ROOT)
    try:
        deadline = time.monotonic() + 60
        while (runs.read_status(run_dir).pid != first.pid or runs.read_status(run_dir).status != "running"):
            assert time.monotonic() < deadline and first.poll() is None
            time.sleep(0.05)
        first.send_signal(signal.SIGSTOP)  # Ctrl-Z: its workers go on writing
        out = nnconsole(["train", "--resume", run_dir, "-q"], check=False)
        assert out.returncode == 2 and f"pid {first.pid}" in out.stderr
        assert "suspended" in out.stderr and f"kill -CONT {first.pid}" in out.stderr
    finally:
        first.kill()  # SIGKILL works on a stopped process; the worker follows (PR_SET_PDEATHSIG)
        first.wait()
    wait_until_gone(run_dir)
    done = nnconsole(["train", "--resume", run_dir, "-q", "--epochs", str(EPOCHS)])  # no stale lock
    assert done.returncode == 0


# ---- one clean history --------------------------------------------------------------------------------
@pytest.mark.slow
def test_kill_9_then_resume_leaves_one_validation_record_per_epoch(tmp_path):
    project = tabular_project(str(tmp_path / "p"), **SETTINGS)
    proc = subprocess.Popen([sys.executable, "-m", "nnconsole.engine.cli.main", "train", project, "-q"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=ENV, cwd=ROOT)
    results = os.path.join(os.path.dirname(project), "results", "project")
    deadline = time.monotonic() + 120
    run_dir = None
    while True:  # until 3 checkpoints exist and training went on past the newest
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            raise AssertionError(f"the run ended before it could be killed: {proc.communicate()}")
        found = runs.list_runs(results)
        if found and len(runs.list_checkpoints(found[-1])) >= 3:
            run_dir = found[-1]
            newest = json.load(open(runs.latest_checkpoint(run_dir)))["iteration"]
            if any(r.get("iteration", 0) > newest for r in runs.iter_metrics(run_dir, "train")):
                break
        time.sleep(0.005)
    worker = [pid for pid, args in live_processes(run_dir) if "nnconsole.engine.train.worker" in args]
    for pid in worker:
        os.kill(pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == 1
    # The newest checkpoint is damaged too: resume starts one epoch earlier, so a validation record
    # and more train records lie beyond the checkpoint it starts from.
    metas = runs.list_checkpoints(run_dir)
    with open(metas[-1][:-5] + ".h5", "r+b") as fh:
        fh.truncate(100)
    start = json.load(open(metas[-2]))["iteration"]
    with open(os.path.join(run_dir, METRICS_FILE), "ab") as fh:
        fh.write(b'{"type":"train","itera')  # a record torn by the kill
    before = metrics_bytes(run_dir)
    beyond = [r for r in runs.iter_metrics(run_dir) if isinstance(r.get("iteration"), int) and r["iteration"] > start]
    assert any(r["type"] == "validation" for r in beyond), "the scenario must leave a validation record beyond"

    out = nnconsole(["train", "--resume", run_dir, "-q"])
    assert "checksum mismatch" in out.stderr
    assert_one_clean_history(run_dir)
    after = metrics_bytes(run_dir)
    kept = [r for r in runs.iter_metrics(run_dir) if isinstance(r.get("iteration"), int) and r["iteration"] <= start]
    # The history up to the checkpoint is the old file's, byte for byte.
    prefix = b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in kept)
    assert before.startswith(prefix) and after.startswith(prefix)


def test_the_reader_survives_torn_and_stray_lines(tmp_path):
    run_dir = str(tmp_path)
    good = [{"type": "train", "iteration": i, "loss": 1.0} for i in (1, 2, 3)]
    lines = [json.dumps(good[0]), '{"type":"tra', json.dumps(good[1]), "42", '"text"', "[1, 2]", "\x00\x00\x00",
             json.dumps(good[2])]
    with open(os.path.join(run_dir, METRICS_FILE), "w") as fh:
        fh.write("\n".join(lines) + "\n" + '{"type":"validation","ep')  # torn last line
    assert list(runs.iter_metrics(run_dir)) == good
    assert list(runs.iter_metrics(run_dir, "train")) == good
    records, offset = runs.read_metrics(run_dir)
    assert records == good
    assert offset == len("\n".join(lines) + "\n")  # a live reader waits for the torn line's end
    # A writer that opens the file after a torn tail starts on a fresh line: nothing merges into it.
    writer = runs.MetricsWriter(run_dir)
    writer.write({"type": "train", "iteration": 4})
    writer.close()
    assert [r["iteration"] for r in runs.iter_metrics(run_dir)] == [1, 2, 3, 4]


def test_trimming_keeps_the_history_up_to_the_checkpoint(tmp_path):
    run_dir = str(tmp_path)
    records = ([{"type": "train", "iteration": i} for i in (10, 20)] + [{"type": "validation", "epoch": 1,
               "iteration": 20}] + [{"type": "warning", "iteration": None, "message": "resumed"}]
               + [{"type": "train", "iteration": i} for i in (30, 40)] + [{"type": "validation", "epoch": 2,
               "iteration": 40}] + [{"type": "train", "iteration": 50}])
    path = os.path.join(run_dir, METRICS_FILE)
    text = "".join(json.dumps(r) + "\n" for r in records)
    with open(path, "w") as fh:
        fh.write(text + '{"type":"tr')
    os.chmod(path, 0o640)
    runs.trim_metrics(run_dir, 40)
    assert list(runs.iter_metrics(run_dir)) == records[:-1]
    with open(path) as fh:
        assert fh.read() == text[: text.rindex('{"type": "train", "iteration": 50}')]
    assert os.stat(path).st_mode & 0o777 == 0o640
    runs.trim_metrics(run_dir, 20)
    assert list(runs.iter_metrics(run_dir)) == records[:3]
    runs.trim_metrics(run_dir, 20)  # nothing beyond: the file is left as it is
    assert list(runs.iter_metrics(run_dir)) == records[:3]


LATE_WRITER = """
import fcntl, os, sys, time
fd = os.open(os.path.join(sys.argv[1], "writer.lock"), os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(0.5)  # a new holder that has the lock but has not yet written its PID over the old one
os.ftruncate(fd, 0)
os.write(fd, f"pid {os.getpid()}\\n".encode())
time.sleep(120)
"""


def test_the_refusal_names_the_live_holder_not_the_previous_one_in_the_lock_file(tmp_path):
    """The lock file outlives its holders: read at the wrong moment it names a dead launcher."""
    from nnconsole.engine.rundir.lock import RunBusyError, RunLock
    run_dir = str(tmp_path)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (tmp_path / "writer.lock").write_text(f"pid {dead.stdout.strip()}\n")
    holder = subprocess.Popen([sys.executable, "-c", LATE_WRITER, run_dir], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(RunBusyError) as refused:
            RunLock(run_dir).acquire()
    finally:
        holder.kill()
        holder.wait()
    assert f"pid {holder.pid}" in str(refused.value) and f"pid {dead.stdout.strip()}" not in str(refused.value)
