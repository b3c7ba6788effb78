"""All ranks of a run agree on the compute backend before any collective on it.

With ``device: auto`` each rank chooses for itself: a node whose CUDA stack is broken trains on the
CPU (MPI all-reduce) while the others wait in NCCL, and mismatched collectives hang forever. Each
rank's choice is gathered through mpi4py (which every backend starts with), and when they differ
every rank fails at once with one message naming each rank, its host, its backend and, for a rank
that fell back to the CPU, the reason.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional
from nnconsole.engine.test_seams import seam
from nnconsole.engine.backend.device import cuda_diagnosis
from nnconsole.engine.backend.mpi import CommError



def _reported_backend(rank: int, backend: str) -> tuple:
    """(backend, note): the rank's own backend, or the ``report_backend`` test seam's ("RANK=BACKEND": that
    rank reports BACKEND, so the disagreement can be produced on a machine without GPUs)."""

    spec = seam("report_backend")
    target, _, forced = spec.partition("=") if isinstance(spec, str) else ("", "", "")
    if forced and target.strip().isdigit() and int(target) == rank:
        return forced.strip(), f"reported as {forced.strip()} by the report_backend test seam"
    return backend, ""


def _reason(choice: Any, requested: str) -> str:
    """Why this rank is on its backend, in a few words."""
    if choice.backend != "cpu":
        return choice.description
    if requested == "cpu":
        return "config.device is 'cpu'"

    return f"fell back to the CPU: {cuda_diagnosis() or 'the GPU check passed on a second look (flaky driver?)'}"


def mismatch_message(everyone: List[Dict[str, Any]]) -> str:
    """The message for ranks that disagree, one line per rank."""
    counts: Dict[str, int] = {}
    for entry in everyone:
        counts[entry["backend"]] = counts.get(entry["backend"], 0) + 1
    summary = ", ".join(f"{n} on {backend}" for backend, n in sorted(counts.items()))
    lines = [f"  rank {e['rank']} on {e['host']}: {e['backend']} ({e['reason']})" for e in everyone]
    return ("the workers chose different compute backends (" + summary + "), so their collectives would "
            "never match and the run would hang:\n" + "\n".join(lines) + "\nFix the GPU stack where a rank fell "
            "back (run 'nnconsole doctor' on that host), or set config.device to 'cpu' for a CPU run or "
            "to 'cuda' to make such a rank fail at once.")


def agree_on_backend(comm: Any, choice: Any, requested: str) -> None:
    """Collective over ``comm.mpi``: return when every rank has ``choice.backend``, else CommError on all.

    Must run before the first collective of the chosen backend (the parameter broadcast, NCCL).
    """
    mpi: Optional[Any] = getattr(comm, "mpi", None)
    if mpi is None or getattr(comm, "size", 1) < 2:
        return
    from mpi4py import MPI  # deferred: mpi4py stays out of the launcher


    rank = mpi.Get_rank()
    backend, note = _reported_backend(rank, choice.backend)
    reason = note or _reason(choice, requested)
    mine = {"rank": rank, "host": MPI.Get_processor_name(), "backend": backend, "reason": reason}
    everyone = mpi.allgather(mine)
    if len({entry["backend"] for entry in everyone}) > 1:
        raise CommError(mismatch_message(everyone))
