"""Run folders as the engine leaves a finished run, without training: a resolved project.yaml (absolute
dataset paths), parameters set to known values and a finished status. For the evaluate, curves and infer
tests, which then compute the expected outputs by hand."""
from __future__ import annotations

import json
import os

import numpy as np

from nnconsole.engine.project.io import save_project
from nnconsole.engine.project.model import Datasets, Layer, Network, Project, TrainingConfig
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.protocol import RESOLVED_FILE

# -- a two-feature classifier x -> Affine -> loss, with these weights, on these samples ------------------------
W = np.array([[2.0, -1.0, 0.0], [0.0, 1.0, -1.5]], dtype=np.float32)
B = np.array([0.1, 0.0, -0.2], dtype=np.float32)
X = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0], [0.5, 0.5], [2.0, 1.0], [-2.0, 0.5]], dtype=np.float32)
LABELS = np.array([0, 1, 2, 2, 0, 1])


def _write_csv(path, x, y):
    with open(path, "w") as fh:
        fh.write("x__0,x__1,y\n")
        for row, label in zip(x, y):
            fh.write(f"{row[0]},{row[1]},{label}\n")


def tiny_run(tmp_path, loss="SoftmaxCrossEntropy", targets=LABELS, out=3, with_best=True):
    """A run directory as the engine leaves it: project.yaml with absolute dataset paths and parameters."""
    import nnabla as nn

    from nnconsole.engine.runtime.graph import build_graph

    data = tmp_path / "data"
    data.mkdir()
    _write_csv(data / "train.csv", X, targets)
    _write_csv(data / "valid.csv", X, targets)
    layers = [Layer("x", "Input", params={"shape": [2], "variable": "x"}),
              Layer("fc", "Affine", ["x"], {"out_shape": out}),
              Layer("y", "Input", params={"shape": [1], "variable": "y"}),
              Layer("loss", loss, ["fc", "y"])]
    project = Project(name="tiny", network=Network(layers), config=TrainingConfig(batch_size=4),
                      datasets=Datasets(training=str(data / "train.csv"), validation=str(data / "valid.csv"),
                                        cache=False))
    run_dir = tmp_path / "results" / "tiny" / "20260101_000000"
    run_dir.mkdir(parents=True)
    save_project(project, str(run_dir / RESOLVED_FILE), backup=False)
    nn.clear_parameters()
    build_graph(project.network, 4, "runtime")
    params = nn.get_parameters()
    params["fc/affine/W"].d = W[:, :out]
    params["fc/affine/b"].d = B[:out]
    nn.save_parameters(str(run_dir / "parameters_final.h5"))
    if with_best:
        nn.save_parameters(str(run_dir / "parameters_best.h5"))
    nn.clear_parameters()
    runs.write_status(str(run_dir), runs.StatusRecord(status="finished"))
    return str(run_dir)


# -- an image classifier x -> Affine(3) -> SoftmaxCrossEntropy with random weights -------------------------
CLASSES = 3
SHAPE = (3, 4, 5)  # colour, 4 high, 5 wide


def make_image_run(tmp_path, shape=SHAPE, with_best=True, names=None):
    """A run folder as the engine leaves it: an image classifier x -> Affine(3) -> SoftmaxCrossEntropy, random weights."""
    import nnabla as nn

    from nnconsole.engine.runtime.graph import build_graph

    tmp_path.mkdir(parents=True, exist_ok=True)
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    (data / "train.csv").write_text("x:image,y:label\nimg.png,0\n")
    if names:
        (data / "labels.txt").write_text("\n".join(names) + "\n")
    layers = [Layer("x", "Input", params={"shape": list(shape), "variable": "x"}),
              Layer("fc", "Affine", ["x"], {"out_shape": CLASSES}),
              Layer("y", "Input", params={"shape": [1], "variable": "y"}),
              Layer("loss", "SoftmaxCrossEntropy", ["fc", "y"])]
    project = Project(name="tiny", network=Network(layers), config=TrainingConfig(batch_size=4),
                      datasets=Datasets(training=str(data / "train.csv"), validation=str(data / "train.csv"),
                                        cache=False))
    run_dir = tmp_path / "results" / "tiny" / "20260101_000000"
    run_dir.mkdir(parents=True)
    save_project(project, str(run_dir / RESOLVED_FILE), backup=False)
    save_project(project, str(tmp_path / "tiny.yaml"), backup=False)  # the project whose results root holds the run
    runs.write_status(str(run_dir), runs.StatusRecord(status="finished"))
    rng = np.random.default_rng(7)
    w = rng.normal(0, 0.5, (int(np.prod(shape)), CLASSES)).astype(np.float32)
    b = rng.normal(0, 0.1, CLASSES).astype(np.float32)
    nn.clear_parameters()
    build_graph(project.network, 2, "runtime")
    params = nn.get_parameters()
    params["fc/affine/W"].d = w
    params["fc/affine/b"].d = b
    nn.save_parameters(str(run_dir / "parameters_final.h5"))
    if with_best:
        nn.save_parameters(str(run_dir / "parameters_best.h5"))
    nn.clear_parameters()
    return str(run_dir), w, b


# -- a search trial's run: status, validation records and trial.json, as nnconsole search leaves it ----------
def search_trial_run(project_path, number, params, error, multiply_adds, state="complete", status="finished",
                     started=None):
    """A run directory of trial ``number`` under the project's results root: its snapshot project (the project
    at ``project_path``), a status with ``error`` as the best validation error, one validation record and a
    ``trial.json`` with ``params``, ``multiply_adds`` and ``state`` (None: no state recorded yet)."""
    import json
    import os
    import time

    from nnconsole.engine.project.io import load_project
    from nnconsole.engine.rundir.protocol import METRICS_FILE
    from nnconsole.engine.rundir.trials import write_trial

    started = started if started is not None else time.time() - 1000 + number
    run_dir = os.path.join(runs.results_root(project_path), f"20260101_{number:06d}")
    os.makedirs(run_dir)
    project = load_project(project_path)
    project.search = None  # a trial's project is an ordinary one
    save_project(project, os.path.join(run_dir, RESOLVED_FILE), backup=False)
    runs.write_status(run_dir, runs.StatusRecord(status=status, started=started, workers=1, logical_batch=32,
                                                 best_validation_error=error, best_epoch=1 if error is not None
                                                 else None, total_macs=multiply_adds))
    with open(os.path.join(run_dir, METRICS_FILE), "w") as fh:
        if error is not None:
            fh.write(json.dumps({"type": "validation", "epoch": 1, "iteration": 10, "loss": 1.0, "error": error,
                                 "count": 100, "best": True}) + "\n")
    tags = {"trial": number, "params": params, "changes": [], "skipped": [], "multiply_adds": multiply_adds,
            "study": project.name}
    if state is not None:
        tags["state"] = state
    write_trial(run_dir, tags)
    return os.path.abspath(run_dir)


def measured_run(project_path, compute_s):
    """A finished 1-worker run of the project (batch 32) whose train records say it computes ``compute_s`` per
    iteration, no all-reduce measured: the input the time-per-epoch predictor reads from a project's runs."""
    run = os.path.join(os.path.dirname(project_path), "results", "project", "20260101_000000")
    os.makedirs(run)
    with open(os.path.join(run, "plan.json"), "w") as f:
        json.dump({"per_worker_batch": 32, "workers": 1}, f)
    with open(os.path.join(run, "status.json"), "w") as f:
        json.dump({"state": "finished"}, f)
    with open(os.path.join(run, "metrics.jsonl"), "w") as f:
        for i in range(3):
            f.write(json.dumps({"type": "train", "iteration": i, "time_per_iter": compute_s,
                                "allreduce_share": 0.0}) + "\n")


def build_end_and_first_train(run_dir: str, split: str = "training") -> tuple:
    """(position of the first train record, position of ``split``'s last dataset_cache record, every record's
    (type, dataset, done, total)) among a run's records: whether training began before the cache build ended."""
    records = list(runs.iter_metrics(run_dir, None))
    kinds = [(r.get("type"), r.get("dataset"), r.get("done"), r.get("total")) for r in records]
    first_train = next(i for i, r in enumerate(records) if r.get("type") == "train")
    built = next(i for i, r in enumerate(records) if r.get("type") == "dataset_cache"
                 and r.get("dataset") == split and r["done"] == r["total"])
    return first_train, built, kinds
