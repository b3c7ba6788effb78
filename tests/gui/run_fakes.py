"""Run directories written by hand (status.json, metrics.jsonl, an evaluation) for GUI tests that need a
run's files but not the minutes it takes to train one."""
from __future__ import annotations

import json
import os
import time
from typing import Any, Dict, List, Optional

from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.protocol import METRICS_FILE


def train_records(epochs: int, per_epoch: int = 23, every: int = 10) -> List[Dict[str, Any]]:
    """Train records every ``every`` iterations and validation records at each epoch end."""
    out: List[Dict[str, Any]] = []
    total = epochs * per_epoch
    for it in range(1, total + 1):
        if it % every == 0 or it % per_epoch == 0:
            out.append({"type": "train", "iteration": it, "epoch": it / per_epoch, "loss": 2.0 / it,
                        "error": 0.5, "lr": 0.001, "total_iterations": total, "elapsed": it * 0.1,
                        "eta": (total - it) * 0.1, "samples_per_s": 320.0})
        if it % per_epoch == 0:
            out.append({"type": "validation", "epoch": it // per_epoch, "iteration": it, "loss": 1.0 / it,
                        "error": 0.3, "count": 360, "best": True})
    return out


def fake_run(project_path: str, name: str, status: str = "finished", records: Optional[List[Dict]] = None,
             started: Optional[float] = None, **fields: Any) -> str:
    """A run directory ``name`` under the project's results root with the given status and records."""
    run_dir = os.path.join(runs.results_root(project_path), name)
    os.makedirs(run_dir)
    st = runs.StatusRecord(status=status, started=started or time.time(), workers=1, logical_batch=32, **fields)
    runs.write_status(run_dir, st)
    with open(os.path.join(run_dir, METRICS_FILE), "w") as fh:
        for record in records if records is not None else train_records(2):
            fh.write(json.dumps(record) + "\n")
    return os.path.abspath(run_dir)


def fake_regression_evaluation(run_dir: str, model: str = "best") -> str:
    """Saved parameters and a regression evaluation of ``run_dir`` (what ``nnconsole evaluate`` writes)."""
    from nnconsole.engine.metrics.results import evaluation_dir

    open(os.path.join(run_dir, f"parameters_{model}.h5"), "wb").close()
    folder = evaluation_dir(run_dir, model)
    os.makedirs(folder)
    metrics = {"task": "regression", "count": 3, "outputs": 1, "mae": 0.5, "rmse": 0.6, "r2": 0.7, "bias": 0.1,
               "max_abs_error": 1.0, "model": model, "run_dir": run_dir, "dataset": ""}
    with open(os.path.join(folder, "metrics.json"), "w") as fh:
        json.dump(metrics, fh)
    with open(os.path.join(folder, "samples.csv"), "w") as fh:
        fh.write("index,source,target,prediction,abs_error\n0,row 1,1.0,1.5,0.5\n1,row 2,2.0,2.0,0\n"
                 "2,row 3,3.0,2.0,1.0\n")
    return folder
