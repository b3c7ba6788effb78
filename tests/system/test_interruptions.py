"""Crashes and interruptions lose nothing: kill -9 a worker, the launcher or the GUI, fill the disk,
let the loss diverge, damage checkpoints.

After each, the project file and the completed checkpoints are intact, the run shows as failed
(resumable) in the history (``runs.effective_status``), no process is left behind, and
``nnconsole train --resume`` ends with the parameters of an uninterrupted run with the same seed.
"""
from __future__ import annotations

import errno
import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from nnconsole.engine.rundir import store as runs
from nnconsole.engine.runtime.checkpoint import (CheckpointError, CheckpointState, NonFiniteParametersError,
                                                 find_usable_checkpoint, read_checkpoint, save_checkpoint)
from nnconsole.engine.launch.launcher import check_resumable
from tests.support.cli import nnconsole, run_dir_from
from tests.support.paths import ROOT
from tests.support.processes import live_processes, wait_until_gone
from tests.support.projects import tabular_project, write_tabular_csv
from tests.support.training import final_params, load_h5, max_relative_error, results_of, train_file_in_process
from nnconsole.engine.rundir.protocol import RESOLVED_FILE

# One worker x batch 16 and two workers x batch 8 make the same updates (keep-logical-batch), so
# one uninterrupted single-worker run is the reference for every scenario.
SETTINGS = dict(n=1024, batch=16, epochs=16, solver="Momentum", lr=0.05, scaling="keep-logical-batch", monitor=16)
SAME_WORKERS = 1e-6  # resume with the worker count of the reference: only float noise
OTHER_WORKERS = 1e-5  # 2 workers vs 1: the all-reduce sums in another order (tests/system/test_multiworker.py)
ENV = dict(os.environ, PYTHONPATH=ROOT)


# ---- helpers ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict:
    """Final parameters of the uninterrupted single-worker run."""
    project = tabular_project(str(tmp_path_factory.mktemp("reference")), **SETTINGS)
    return final_params(train_file_in_process(project))  # the worker's Trainer, in this process


def new_project(tmp_path, name: str = "p", workers: int = 1) -> str:
    return tabular_project(str(tmp_path / name), workers=workers, **SETTINGS)


def start(project: str, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "nnconsole.engine.cli.main", "train", project, "-q", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=ROOT)


def wait_for_checkpoints(results: str, count: int, alive, timeout: float = 60) -> str:
    """The run directory once ``count`` complete checkpoints exist; fails if the run ends first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = runs.list_runs(results)
        if found and len(runs.list_checkpoints(found[-1])) >= count:
            return found[-1]
        assert alive(), "the run ended before it could be interrupted"
        time.sleep(0.02)
    raise AssertionError(f"no {count} checkpoints after {timeout} s")


def worker_pids(run_dir: str) -> list:
    return [pid for pid, args in live_processes(run_dir) if "nnconsole.engine.train.worker" in args and "mpiexec" not in args
            and "prterun" not in args]


def assert_intact(project: str, before: bytes, run_dir: str) -> None:
    """Project file unchanged; every complete checkpoint verifies; history says failed, resumable."""
    assert open(project, "rb").read() == before
    assert runs.list_checkpoints(run_dir)
    for meta in runs.list_checkpoints(run_dir):
        read_checkpoint(meta)
    status = runs.effective_status(run_dir)
    assert status.status == "failed" and status.resumable, status


def resume(run_dir: str, *extra: str) -> subprocess.CompletedProcess:
    out = nnconsole(["train", "--resume", run_dir, "-q", *extra], timeout=300)
    assert runs.read_status(run_dir).status == "finished"
    return out


def damage(path: str, how: str) -> None:
    data = bytearray(open(path, "rb").read())
    if how == "truncate":
        data = data[: len(data) // 2]
    else:  # flip one bit in the middle
        data[len(data) // 2] ^= 0x10
    with open(path, "wb") as fh:
        fh.write(bytes(data))


# ---- kill -9 a worker ---------------------------------------------------------------------------------
@pytest.mark.slow
def test_killed_worker_fails_the_run_and_resume_skips_a_damaged_checkpoint(tmp_path, reference):
    project = new_project(tmp_path)
    before = open(project, "rb").read()
    proc = start(project)
    run_dir = wait_for_checkpoints(results_of(project), 2, lambda: proc.poll() is None)
    [worker] = worker_pids(run_dir)
    killed = time.monotonic()
    os.kill(worker, signal.SIGKILL)
    stdout, stderr = proc.communicate(timeout=60)
    ended = time.monotonic() - killed
    assert proc.returncode == 1 and ended < 10
    assert "killed by SIGKILL" in stderr and "Traceback" not in stderr
    assert f"nnconsole train --resume {run_dir}" in stderr
    assert_intact(project, before, run_dir)
    assert runs.read_status(run_dir).status == "failed"  # the launcher recorded it itself

    # The newest checkpoint is damaged (a disk error): resume says so and starts from the one before.
    newest, previous = runs.list_checkpoints(run_dir)[-1], runs.list_checkpoints(run_dir)[-2]
    damage(newest[:-5] + ".h5", "truncate")
    started_from = load_h5(previous[:-5] + ".h5")
    out = resume(run_dir)
    assert f"warning: {newest[:-5]}.h5: checksum mismatch" in out.stderr
    warnings = [r for r in runs.iter_metrics(run_dir, "warning") if "checksum mismatch" in r["message"]]
    assert warnings, "the GUI reads warnings from metrics.jsonl"
    assert max_relative_error(reference, final_params(run_dir)) <= SAME_WORKERS
    assert max_relative_error(reference, started_from) > 1e-3  # the resumed part mattered


@pytest.mark.mpi
def test_killed_rank_ends_a_two_worker_job_within_seconds(tmp_path, reference):
    project = new_project(tmp_path, workers=2)
    before = open(project, "rb").read()
    proc = start(project)
    run_dir = wait_for_checkpoints(results_of(project), 1, lambda: proc.poll() is None)
    ranks = sorted(worker_pids(run_dir))
    assert len(ranks) == 2
    killed = time.monotonic()
    os.kill(ranks[1], signal.SIGKILL)
    stdout, stderr = proc.communicate(timeout=60)
    ended = time.monotonic() - killed
    assert proc.returncode == 1 and ended < 10, ended
    assert "killed by SIGKILL" in stderr and "Traceback" not in stderr
    assert runs.read_status(run_dir).failed_rank == 1
    assert wait_until_gone(run_dir) < 5
    # Open MPI cannot remove a killed rank's shared memory; the launcher removes its private folder.
    assert not [n for n in os.listdir("/dev/shm") if n.startswith(f"nnconsole-{proc.pid}-")]
    assert_intact(project, before, run_dir)
    # Resume on one worker: the plan is recomputed and the result is the uninterrupted one.
    resume(run_dir, "--gpus", "1")
    assert max_relative_error(reference, final_params(run_dir)) <= OTHER_WORKERS


# ---- kill -9 the launcher -----------------------------------------------------------------------------
@pytest.mark.slow
def test_killed_launcher_takes_its_worker_along_and_the_run_resumes(tmp_path, reference):
    project = new_project(tmp_path)
    before = open(project, "rb").read()
    proc = start(project)
    run_dir = wait_for_checkpoints(results_of(project), 2, lambda: proc.poll() is None)
    proc.kill()
    proc.communicate(timeout=30)
    # The worker gets SIGTERM from the kernel (PR_SET_PDEATHSIG): it stops with a checkpoint and exits.
    assert wait_until_gone(run_dir) < 10
    assert runs.read_status(run_dir).status == "running"  # nobody was left to record the end ...
    assert_intact(project, before, run_dir)  # ... and the history shows it failed, resumable

    newest = runs.list_checkpoints(run_dir)[-1]
    damage(newest[:-5] + ".solver0.h5", "flip")
    out = resume(run_dir)
    assert "checksum mismatch" in out.stderr
    assert max_relative_error(reference, final_params(run_dir)) <= SAME_WORKERS


def _listeners() -> dict:
    """{pid: [local address, ...]} of listening TCP sockets (IPv4 and IPv6).

    Read from /proc (what ``ss -ltnp`` reads), so that the check never depends on ``ss`` being installed.
    """
    addresses = {}  # socket inode -> local address (hex, as the kernel writes it)
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        with open(table) as fh:
            for line in fh.readlines()[1:]:
                fields = line.split()
                if fields[3] == "0A":  # TCP_LISTEN
                    addresses[fields[9]] = fields[1]
    found: dict = {}
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir(f"/proc/{name}/fd")
        except OSError:
            continue  # ended meanwhile, or not ours to read
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{name}/fd/{fd}")
            except OSError:
                continue  # closed meanwhile (the listing's own descriptor, for one)
            match = re.fullmatch(r"socket:\[(\d+)\]", link)
            if match and match.group(1) in addresses:
                found.setdefault(int(name), []).append(addresses[match.group(1)])
    return found


def test_listeners_finds_a_listening_socket():
    """The check below must see a listener when there is one (else it could pass by seeing nothing)."""
    import socket

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        address = f"0100007F:{server.getsockname()[1]:04X}"
        # (this test process may hold other listeners from earlier tests, e.g. an in-process MPI)
        assert address not in _listeners().get(os.getpid(), [])
        server.listen()
        assert address in _listeners()[os.getpid()]


@pytest.mark.mpi
def test_killed_launcher_takes_mpiexec_and_both_ranks_along(tmp_path, reference):
    project = new_project(tmp_path, workers=2)
    before = open(project, "rb").read()
    proc = start(project)
    run_dir = wait_for_checkpoints(results_of(project), 1, lambda: proc.poll() is None)
    # While it runs: the ranks open no TCP listener (shared memory only on one machine); what
    # mpiexec itself opens is documented in docs/security.md.
    listening = _listeners()
    assert not [pid for pid in worker_pids(run_dir) if pid in listening], listening
    assert proc.pid not in listening
    proc.kill()
    proc.communicate(timeout=30)
    assert wait_until_gone(run_dir) < 10
    assert_intact(project, before, run_dir)
    resume(run_dir, "--gpus", "1")
    assert max_relative_error(reference, final_params(run_dir)) <= OTHER_WORKERS


# ---- kill the GUI -------------------------------------------------------------------------------------
GUI = """
import subprocess, sys, time
# Like the GUI's RunController: 'nnconsole train PROJECT --gpus 1 --quiet' in a child with pipes.
child = subprocess.Popen([sys.executable, "-m", "nnconsole.engine.cli.main", "train", sys.argv[1], "--gpus", "1", "--quiet"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
print(child.pid, flush=True)
child.stdout.readline()  # 'run directory: ...'
time.sleep(3600)
"""


@pytest.mark.slow
def test_a_killed_gui_leaves_the_run_going_to_the_same_end(tmp_path, reference):
    project = new_project(tmp_path)
    before = open(project, "rb").read()
    gui = subprocess.Popen([sys.executable, "-c", GUI, project], stdout=subprocess.PIPE, text=True, env=ENV,
                           cwd=ROOT)
    launcher = int(gui.stdout.readline())
    run_dir = wait_for_checkpoints(results_of(project), 1, lambda: runs_alive(launcher))
    gui.kill()
    gui.wait(timeout=10)
    assert runs_alive(launcher) and runs.read_status(run_dir).status == "running"  # killed mid-run
    # The launcher outlives its reader (its output pipes are broken): the run goes on to its end,
    # so a GUI crash costs nothing; a restarted GUI finds it in the history (status 'running').
    # The worker still had 15 of 16 epochs to train: it was alive when the wait began (the wait polls
    # every 0.05 s, so it lasts at least that long only if a process was there), and it ended by itself.
    assert wait_until_gone(run_dir, timeout=120) >= 0.05
    deadline = time.monotonic() + 30
    while runs_alive(launcher) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not runs_alive(launcher)
    assert runs.effective_status(run_dir).status == "finished"
    assert [r["epoch"] for r in runs.iter_metrics(run_dir, "validation")] == list(range(1, 17))
    assert open(project, "rb").read() == before
    assert max_relative_error(reference, final_params(run_dir)) <= SAME_WORKERS


def runs_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


# ---- a full disk --------------------------------------------------------------------------------------
@pytest.fixture
def small_disk(tmp_path):
    """A 4 MiB tmpfs (needs root; without it the in-process test below still covers ENOSPC)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root; test_checkpoint_writes_are_atomic_under_enospc covers it")
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()})")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def fill(folder) -> str:
    """Fill the disk holding ``folder``; returns the filler file (delete it to free the space)."""
    path = os.path.join(folder, "filler")
    with open(path, "wb", buffering=0) as fh:
        try:
            while True:
                fh.write(b"\0" * 65536)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    return path


@pytest.mark.slow
def test_a_full_disk_during_training_is_reported_and_the_run_resumes(tmp_path, small_disk, reference):
    project = new_project(tmp_path)
    before = open(project, "rb").read()
    proc = start(project, "--output", str(small_disk))
    run_dir = wait_for_checkpoints(str(small_disk), 2, lambda: proc.poll() is None)
    filler = fill(small_disk)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert "is full" in stderr and "Traceback" not in stderr, stderr
    assert f"nnconsole train --resume {run_dir}" in stderr
    assert not live_processes(run_dir)
    assert_intact(project, before, run_dir)
    leftovers = [n for n in os.listdir(runs.checkpoint_dir(run_dir)) if ".tmp" in n]
    assert not leftovers, leftovers

    os.unlink(filler)
    resume(run_dir)
    assert max_relative_error(reference, final_params(run_dir)) <= SAME_WORKERS
    # One history: what the full disk cut short beyond the checkpoint is not repeated (issue 13 item 10).
    assert [r["epoch"] for r in runs.iter_metrics(run_dir, "validation")] == list(range(1, SETTINGS["epochs"] + 1))


def _tiny_model():
    import nnabla as nn
    import nnabla.solvers as S

    nn.clear_parameters()
    w = nn.parameter.get_parameter_or_create("w", (3, 2), np.ones((3, 2), np.float32))
    solver = S.Momentum(0.1)
    solver.set_parameters({"w": w})
    return w, [solver]


def _state(iteration: int) -> CheckpointState:
    return CheckpointState(iteration=iteration, epoch=iteration // 10, samples_into_epoch=0,
                           samples_seen=iteration * 8, workers=1, elapsed=1.0)


def test_checkpoint_writes_are_atomic_under_enospc(tmp_path):
    import nnabla as nn

    run_dir = str(tmp_path)
    w, solvers = _tiny_model()
    good = save_checkpoint(run_dir, _state(10), solvers)
    w.d = w.d * 2

    # The disk fills while the solver state is written: nothing half-written may count or remain.
    class FullDisk:
        def save_states(self, path):
            with open(path, "wb") as fh:
                fh.write(b"partial")
            raise OSError(errno.ENOSPC, "No space left on device", path)
    with pytest.raises(OSError) as info:
        save_checkpoint(run_dir, _state(20), [FullDisk()])
    assert info.value.errno == errno.ENOSPC
    assert runs.list_checkpoints(run_dir) == [good]
    assert find_usable_checkpoint(run_dir, warn=pytest.fail) == good
    assert not [n for n in os.listdir(runs.checkpoint_dir(run_dir)) if ".tmp" in n]
    # The parameters file of the failed checkpoint was renamed into place before the failure; it
    # has no metadata, so it never counts, and the next complete checkpoint removes it.
    save_checkpoint(run_dir, _state(30), solvers)
    names = os.listdir(runs.checkpoint_dir(run_dir))
    assert not [n for n in names if n.startswith("ckpt-00000020")], names

    # Diverged parameters are never saved: the last good checkpoint stays the newest.
    w.d = np.full((3, 2), np.nan, np.float32)
    with pytest.raises(NonFiniteParametersError, match="ckpt-00000030, is kept"):
        save_checkpoint(run_dir, _state(40), solvers)
    assert [os.path.basename(m) for m in runs.list_checkpoints(run_dir)] == ["ckpt-00000010.json",
                                                                              "ckpt-00000030.json"]
    nn.clear_parameters()


def test_damaged_checkpoints_are_skipped_and_reported(tmp_path):
    import nnabla as nn

    run_dir = str(tmp_path)
    w, solvers = _tiny_model()
    metas = []
    for it in (10, 20, 30, 40, 50):
        w.d = w.d + 1
        metas.append(save_checkpoint(run_dir, _state(it), solvers))
    kept = runs.list_checkpoints(run_dir)
    assert kept == metas[-3:]
    damage(kept[2][:-5] + ".h5", "flip")
    warnings: list = []
    assert find_usable_checkpoint(run_dir, warn=warnings.append) == kept[1]
    assert len(warnings) == 1 and "ckpt-00000050.h5: checksum mismatch" in warnings[0]
    for bad in ('{"iteration": 40', '[1, 2]', '{"iteration": 40, "epoch": 4, "samples_into_epoch": 0, '
                '"samples_seen": 1, "workers": 1, "elapsed": 0, "files": {"../../etc/passwd": "x"}}'):
        with open(kept[1], "w") as fh:
            fh.write(bad)
        with pytest.raises(CheckpointError):
            read_checkpoint(kept[1])
    os.unlink(kept[0][:-5] + ".solver0.h5")
    assert find_usable_checkpoint(run_dir, warn=warnings.append) is None
    with open(os.path.join(run_dir, RESOLVED_FILE), "w") as fh:
        fh.write("format_version: 2\n")
    with pytest.raises(CheckpointError, match="every checkpoint is damaged"):
        check_resumable(run_dir)
    nn.clear_parameters()


def test_resume_is_refused_cleanly_when_impossible(tmp_path):
    project = new_project(tmp_path)
    # Not a run directory, a run with no checkpoint, and a run whose process is still alive.
    out = nnconsole(["train", "--resume", str(tmp_path)], check=False)
    assert out.returncode == 2 and "not a run directory" in out.stderr and "Traceback" not in out.stderr
    run_dir = tmp_path / "run"
    os.makedirs(run_dir / "checkpoints")
    (run_dir / RESOLVED_FILE).write_bytes(open(project, "rb").read())
    out = nnconsole(["train", "--resume", str(run_dir)], check=False)
    assert out.returncode == 2 and "before its first checkpoint" in out.stderr
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        runs.write_status(str(run_dir), runs.StatusRecord(status="running", pid=sleeper.pid))
        with pytest.raises(CheckpointError, match="still going"):
            check_resumable(str(run_dir))
    finally:
        sleeper.kill()
        sleeper.wait()
    # The launcher is gone but a worker of the run is still writing its last checkpoint.
    orphan = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "nnconsole.engine.train.worker", str(run_dir)])
    try:
        while not live_processes(str(run_dir)):  # until exec() has given it its command line
            time.sleep(0.01)
        with pytest.raises(CheckpointError, match=f"process\\(es\\) {orphan.pid} of this run are still ending"):
            check_resumable(str(run_dir))
    finally:
        orphan.kill()
        orphan.wait()


# ---- a diverging loss ---------------------------------------------------------------------------------
def diverging_project(folder) -> str:
    """Linear regression whose learning rate is multiplied by 1000 every epoch: fine in epoch 1,
    overflowing in epoch 2."""
    from nnconsole.engine.project.io import save_project
    from nnconsole.engine.project.model import (Datasets, Initializer, Layer, Network, Optimizer, Project,
                                                TrainingConfig)

    os.makedirs(folder, exist_ok=True)
    write_tabular_csv(os.path.join(folder, "train.csv"), n=256)
    write_tabular_csv(os.path.join(folder, "valid.csv"), n=64, seed=1)
    layers = [Layer("x", "Input", params={"shape": [4]}),
              Layer("fc", "Affine", ["x"], {"out_shape": 1},
                    initializers={"W": Initializer("NormalAffineGlorot"), "b": Initializer("Constant")}),
              Layer("y", "Input", params={"shape": [1]}),
              Layer("loss", "SquaredError", ["fc", "y"])]
    project = Project(name="diverges", network=Network(layers), datasets=Datasets("train.csv", "valid.csv"),
                      config=TrainingConfig(max_epoch=20, batch_size=16, log_interval=4, seed=1, device="cpu"),
                      optimizer=Optimizer(solver="Sgd", learning_rate=0.01, lr_multiplier=1000.0,
                                          lr_update_interval=16))
    path = os.path.join(folder, "project.yaml")
    save_project(project, path, backup=False)
    return path


@pytest.mark.slow
def test_a_diverging_loss_stops_with_a_clear_message_and_keeps_the_good_checkpoint(tmp_path):
    project = diverging_project(str(tmp_path / "nan"))
    before = open(project, "rb").read()
    out = nnconsole(["train", project, "-q"], check=False)
    assert out.returncode == 1
    assert "Traceback" not in out.stderr, out.stderr
    assert "training loss became" in out.stderr and "lower optimizer.learning_rate" in out.stderr
    run_dir = run_dir_from(out.stdout)
    assert f"last good checkpoint kept: {run_dir}/checkpoints/ckpt-00000016.h5" in out.stderr
    status = runs.effective_status(run_dir)
    assert status.status == "failed" and status.resumable
    [meta] = runs.list_checkpoints(run_dir)
    assert json.load(open(meta))["epoch"] == 1
    params = load_h5(meta[:-5] + ".h5")
    assert all(np.isfinite(v).all() for v in params.values())
    assert open(project, "rb").read() == before
    assert os.path.isfile(os.path.join(run_dir, "logs", "rank0.error.json"))  # the traceback is kept there
