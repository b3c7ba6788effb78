"""Run directories with fabricated iteration timings, as a project's earlier runs leave them: what the
epoch-time prediction reads (plan.json's workers and per-worker batch, metrics.jsonl's train records with
time_per_iter and allreduce_share, launch.json's machine and hosts)."""
from __future__ import annotations

import json
import os
import socket
import time
from typing import List, Optional

from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.protocol import LAUNCH_FILE


def timed_run(project_path: str, name: str, workers: int, per_worker_batch: int, time_per_iter: float,
              allreduce_share: float, records: int = 6, machine: Optional[str] = None,
              hosts: Optional[List[str]] = None, device: str = "cpu") -> str:
    """A finished run ``name`` of the project (default results folder) whose every train record after the first
    (the start-up, 10x slower) took ``time_per_iter`` seconds, ``allreduce_share`` of it in the all-reduce."""
    run_dir = os.path.join(runs.results_root(project_path), name)
    os.makedirs(run_dir)
    runs.write_status(run_dir, runs.StatusRecord(status="finished", started=time.time(), workers=workers,
                                                  logical_batch=workers * per_worker_batch))
    with open(os.path.join(run_dir, "plan.json"), "w") as fh:
        json.dump({"workers": workers, "per_worker_batch": per_worker_batch, "device": device}, fh)
    with open(os.path.join(run_dir, LAUNCH_FILE), "w") as fh:  # what the launcher writes (WorkerOptions)
        json.dump({"workers": workers, "hosts": list(hosts or []), "hostfile": "",
                   "machine": socket.gethostname() if machine is None else machine}, fh)
    with open(os.path.join(run_dir, "metrics.jsonl"), "w") as fh:
        for i in range(records):
            t = time_per_iter * (10 if i == 0 else 1)
            fh.write(json.dumps({"type": "train", "iteration": 10 * (i + 1), "epoch": 0.1 * (i + 1), "loss": 1.0,
                                 "error": 0.5, "lr": 0.01, "samples_per_s": workers * per_worker_batch / t,
                                 "time_per_iter": t, "allreduce_share": allreduce_share,
                                 "elapsed": float(i), "eta": 1.0, "total_iterations": 100}) + "\n")
    return os.path.abspath(run_dir)
