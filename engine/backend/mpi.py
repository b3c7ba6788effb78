"""MPI facts every rank needs before (or without) a communicator: whether an MPI launcher started this process,
COMM_WORLD, local rank and host count, and ``CommError`` for a communicator that cannot be made. mpi4py is
imported only inside the functions (the GUI and the launcher never call them)."""
from __future__ import annotations

import os
from typing import Any, Dict, Optional

from nnconsole.engine.errors import RunFailedError


class CommError(RunFailedError, RuntimeError):
    """A communicator that cannot be created; the message says why (never fall back silently)."""



def local_rank_of(mpi_comm: Any) -> int:
    """This rank's index among the ranks of ``mpi_comm`` on its host (shared-memory node; collective)."""
    from mpi4py import MPI  # deferred: mpi4py stays out of the launcher

    node = mpi_comm.Split_type(MPI.COMM_TYPE_SHARED, key=mpi_comm.Get_rank())
    local = node.Get_rank()
    node.Free()
    return local


def host_count(mpi_comm: Any) -> int:
    """How many hosts the ranks of ``mpi_comm`` run on (collective): one local rank 0 each."""
    from mpi4py import MPI  # deferred: mpi4py stays out of the launcher

    return int(mpi_comm.allreduce(1 if local_rank_of(mpi_comm) == 0 else 0, op=MPI.SUM))


def mpi_world() -> Optional[Any]:
    """COMM_WORLD when this process was started by an MPI launcher with more than one rank."""
    try:
        from mpi4py import MPI  # deferred: mpi4py stays out of the launcher
    except ImportError as exc:
        raise CommError(f"mpi4py is not importable ({exc}); reinstall nnconsole into its venv") from None
    world = MPI.COMM_WORLD
    return world if world.Get_size() > 1 else None


# Variables that MPI launchers (Open MPI/PRRTE, PMIx, MPICH/Hydra, Intel MPI, MVAPICH, Slurm) put into
# every rank's environment.
MPI_LAUNCHER_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS",
                          "MV2_COMM_WORLD_SIZE", "SLURM_PROCID")


def launched_by_mpi(environ: Optional[Dict[str, str]] = None) -> bool:
    """True when an MPI launcher may have started this process (one of its variables is set).

    Only used to skip initialising MPI in a plain single-process run: Open MPI's singleton start-up
    costs about a second (bench/startup.py). Rank and size still come from MPI itself.
    """
    env = os.environ if environ is None else environ
    return any(env.get(name) for name in MPI_LAUNCHER_VARIABLES)
