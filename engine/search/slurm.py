"""A search under Slurm as a job array: the sbatch script ``nnconsole search PROJECT --slurm-array N`` writes.

Optuna's distributed pattern: every array task runs ``nnconsole search`` on the same storage and study, and
the study hands each its trials. Each task is given the whole budget (``--trials T``) as the study's limit,
not a fixed share: a task asks for trials until the study holds T (running ones included; a trial asked beyond
it is given back), so the array spends exactly the budget however fast each node is, and a task that starts
late or dies leaves its work to the others. Each task is one node's K x G (``--parallel``,
``--workers-per-trial``): the script asks Slurm for K x G tasks on one node and, on GPUs, K x G GPUs.

The script is written, never submitted (``sbatch FILE`` does). SQLite is refused when the tasks may run on
different nodes: its file would be shared over a network file system, where SQLite's locking is unsafe;
PostgreSQL (``--storage postgresql://...``) is the storage for several nodes. Pinning every task to one node
(``--slurm-node``) allows SQLite.
"""
from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from typing import List

from nnconsole.engine.errors import NnconsoleError

SCRIPT_NAME = "slurm_array.sbatch"


class SlurmArrayError(NnconsoleError, ValueError):
    """A job array that cannot work as asked; the message says what to change."""


@dataclass
class ArraySpec:
    """What the script runs: the array's size, each task's K x G, and the search command of every task."""

    tasks: int
    parallel: int
    workers: int
    storage: str
    study: str
    trials: int
    search_command: List[str]  # ``nnconsole search PROJECT ...`` without --storage/--study/--trials/--parallel/-G
    gpus: bool = False
    node: str = ""
    time_limit: str = ""
    log_dir: str = ""
    extra: List[str] = field(default_factory=list)  # further #SBATCH lines' values, e.g. --partition=gpu


def check_storage(storage: str, tasks: int, node: str) -> None:
    """Refuse SQLite for an array whose tasks may run on several nodes."""
    if storage.startswith("sqlite") and tasks > 1 and not node:
        raise SlurmArrayError(
            f"--slurm-array {tasks} with SQLite storage ({storage}): the array's tasks may run on different nodes, "
            "and SQLite over a network file system (NFS) is unsafe for several machines at once; use a PostgreSQL "
            "server (--storage postgresql://USER@HOST/DB) or keep every task on one node with --slurm-node NAME")


def array_script(spec: ArraySpec) -> str:
    """The sbatch script of ``spec``: one array task per search process on the one study."""
    check_storage(spec.storage, spec.tasks, spec.node)
    slots = spec.parallel * spec.workers
    lines = ["#!/bin/bash",
             f"#SBATCH --job-name=nnconsole-search-{_safe(spec.study)}",
             f"#SBATCH --array=0-{spec.tasks - 1}",
             "#SBATCH --nodes=1",
             f"#SBATCH --ntasks={slots}"]
    if spec.gpus:
        lines.append(f"#SBATCH --gpus-per-node={slots}")  # each worker sees the node's GPUs (docs/multi-gpu.md)
    if spec.node:
        lines.append(f"#SBATCH --nodelist={spec.node}")
    if spec.time_limit:
        lines.append(f"#SBATCH --time={spec.time_limit}")
    if spec.log_dir:
        lines.append(f"#SBATCH --output={os.path.join(spec.log_dir, 'slurm-%A_%a.out')}")
    lines += [f"#SBATCH {value}" for value in spec.extra]
    command = spec.search_command + ["--storage", spec.storage, "--study", spec.study, "--trials", str(spec.trials),
                                     "--parallel", str(spec.parallel), "--workers-per-trial", str(spec.workers)]
    lines += [
        "# Written by 'nnconsole search --slurm-array'; submit with: sbatch THIS_FILE",
        f"# {spec.tasks} array task(s) share study '{spec.study}': each asks for trials until the study holds "
        f"{spec.trials} (the budget), {spec.parallel} at once x {spec.workers} worker(s).",
        "set -euo pipefail",
        ': "${SLURM_ARRAY_TASK_ID:?run this script with sbatch (it is a Slurm job array)}"',
        'echo "array task ${SLURM_ARRAY_TASK_ID} of ' + str(spec.tasks) + ' on $(hostname)"',
        "exec " + " ".join(shlex.quote(part) for part in command),
        ""]
    return "\n".join(lines)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:60] or "study"
