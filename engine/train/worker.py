"""``python -m nnconsole.engine.train.worker RUN_DIR``: the process every rank runs (alone, or under mpiexec/srun).

A rank that fails writes its error record (``protocol.ErrorRecord``: traceback and the user_error /
exit_code flags of its exception) to ``logs/rank<r>.error.json`` and aborts the whole MPI job,
so the launcher can name the failing rank within seconds and no rank is left waiting.
"""
from __future__ import annotations

import json
import os
import sys
import time
import traceback
from typing import Any

from nnconsole.engine.atomic import atomic_write
from nnconsole.engine.rundir.protocol import RESOLVED_FILE, RunStatus, error_file, error_record
from nnconsole.engine.errors import ExitCode
from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.backend.agreement import agree_on_backend
from nnconsole.engine.comm.cpu import create_communicator
from nnconsole.engine.comm.nccl import NcclGpuComm
from nnconsole.engine.backend.device import select_device
from nnconsole.engine.data.cache_build import DatasetBuildStopped
from nnconsole.engine.data.loading import build_note
from nnconsole.engine.train.trainer import Trainer
from nnconsole.engine.train.simulated import SimulatedComm
from nnconsole.engine.rundir.launch_options import WorkerOptions
from nnconsole.engine.backend.mpi import launched_by_mpi
from nnconsole.engine.plan.explain import GPU_HALF_ALLREDUCE_MESSAGE


def _rank_and_size() -> tuple:
    """(rank, size) from MPI when an MPI launcher started this process; (0, 1) without touching MPI.

    A one-worker run must not initialise MPI: Open MPI 5 then runs as a "singleton" and leaves a
    shared-memory segment in /dev/shm behind at every run.
    """
    try:
        if not launched_by_mpi():
            return 0, 1
        from mpi4py import MPI  # deferred: a one-process run never starts MPI (about 1 s)
        return MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size()
    except Exception:
        return 0, 1


def _report_failure(run_dir: str, rank: int, exc: BaseException) -> None:
    """Leave the failure where the launcher looks (``logs/rank<r>.error.json``) and on stderr.

    Never raises: on a full disk the file cannot be written, and the launcher then reports the
    exit code and the free space instead.
    """
    record = error_record(rank, exc, "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
                          time.time())  # its user_error/exit_code/diverged flags come from the exception's class
    try:
        atomic_write(error_file(run_dir, rank), json.dumps(record, indent=2).encode())
    except OSError:
        pass
    try:
        sys.stderr.write(f"[rank {rank}] {record['traceback']}")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def main(argv: list | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) != 1:
        sys.stderr.write("usage: python -m nnconsole.engine.train.worker RUN_DIR\n")
        return ExitCode.BAD_INPUT
    run_dir = argv[0]
    os.environ.setdefault("NNABLA_LOG_LEVEL", "WARNING")
    rank, size = _rank_and_size()
    try:
        outcome = run_worker(run_dir)
    except BaseException as exc:  # noqa: BLE001 - every failure must reach the launcher
        _report_failure(run_dir, rank, exc)
        if size > 1:
            from mpi4py import MPI  # deferred: only a failing rank of an MPI job gets here
            MPI.COMM_WORLD.Abort(ExitCode.FAILED)
        return ExitCode.FAILED
    return ExitCode.STOPPED if outcome == RunStatus.STOPPED else ExitCode.OK


def run_worker(run_dir: str, comm: Any = None, device_choice: Any = None) -> RunStatus:
    """Entry of every rank: returns the outcome (FINISHED or STOPPED); raises on failure.

    Ranks agree on their start (parameter broadcast, resume) through the MPI communicator; on GPU
    the gradients then go through NCCL, whose communicator needs the context and the parameters
    that ``Trainer.setup`` creates.
    """

    options = WorkerOptions.read(run_dir)
    project = load_valid_project(os.path.join(run_dir, RESOLVED_FILE), check_datasets=False)
    if comm is None:
        comm = create_communicator(bucket_mb=project.multi_gpu.bucket_mb, require_mpi=options.workers > 1,
                                   half_allreduce=project.multi_gpu.allreduce_precision == "half",
                                   overlap=False if options.simulate_workers > 1 else project.multi_gpu.allreduce_overlap)
        if options.simulate_workers > 1:  # N workers, N / M after another in each of the M processes
            comm = SimulatedComm(options.simulate_workers, inner=comm)
    if device_choice is None:
        device_choice = select_device(options.device or project.config.device, project.config.precision,
                                      comm.local_rank)
    # Before any collective on the chosen backend: ranks on different backends would hang.
    agree_on_backend(comm, device_choice, options.device or project.config.device)
    trainer = Trainer(run_dir, comm, options)
    try:
        try:
            trainer.setup(device_choice, project)
        except DatasetBuildStopped as exc:  # stopped before the first iteration: nothing to checkpoint yet
            trainer.log.info("%s", exc)
            return RunStatus.STOPPED
        processes = getattr(comm, "inner", comm)  # a simulated run's real processes
        if device_choice.backend == "cuda" and processes.size > 1:
            import nnabla as nn  # deferred: nnabla stays out of the launcher

            gpu_comm = NcclGpuComm(processes.mpi, device_choice.context, nn.get_parameters(grad_only=True))
            if processes is comm:
                trainer.comm = gpu_comm
            else:  # the simulated workers' sums go through NCCL between the processes
                comm.inner = gpu_comm
            if getattr(comm, "half", None) is not None:  # the CPU all-reduce's float16 messages: not on GPU
                trainer.warn(GPU_HALF_ALLREDUCE_MESSAGE)
        status = trainer.run()
        note = build_note(trainer.train_set, trainer.valid_set)  # cache builds going on behind the first epoch
        if note is not None:
            trainer.log.info("%s", note)
        return status
    except BaseException:
        # A failing run ends now: the training set's cache build (a non-daemon thread the process would wait
        # for at exit) stops at its next chunk, its build folder kept for the next run to resume, instead of
        # holding the failure back until it has decoded every file. Before close(): the prefetch thread it
        # joins may be waiting for the build's next chunk.
        trainer.stop.request()
        raise
    finally:
        trainer.close()


if __name__ == "__main__":
    raise SystemExit(main())
