"""Small projects built in a temp folder, and a way to run the real CLI as a user would."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import List, Optional

import numpy as np

from nnconsole.engine.project.io import save_project
from nnconsole.engine.project.model import Datasets, Initializer, Layer, Network, Optimizer, Project, TrainingConfig
from nnconsole.engine.check.project_file import load_valid_project

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_tabular_csv(path: str, n: int = 64, features: int = 4, classes: int = 3, seed: int = 0) -> None:
    """A separable-ish classification set in NNC's numeric-column format."""
    rng = np.random.RandomState(seed)
    centers = rng.randn(classes, features) * 2
    labels = rng.randint(0, classes, size=n)
    x = centers[labels] + rng.randn(n, features) * 0.5
    header = ",".join([f"x__{i}" for i in range(features)] + ["y"])
    rows = [",".join([f"{v:.6f}" for v in x[i]] + [str(labels[i])]) for i in range(n)]
    with open(path, "w") as fh:
        fh.write(header + "\n" + "\n".join(rows) + "\n")


def tabular_project(folder: str, n: int = 64, batch: int = 8, epochs: int = 3, solver: str = "Sgd",
                    lr: float = 0.1, workers: int = 1, scaling: str = "linear", shuffle: bool = True,
                    hidden: int = 8, name: str = "project.yaml", monitor: int = 2) -> str:
    """An MLP classifier (no dropout, no batch-norm) on a generated CSV; returns the project path."""
    os.makedirs(folder, exist_ok=True)
    write_tabular_csv(os.path.join(folder, "train.csv"), n=n)
    write_tabular_csv(os.path.join(folder, "valid.csv"), n=max(n // 2, 8), seed=1)
    glorot = {"W": Initializer("NormalAffineGlorot"), "b": Initializer("Constant", value=0.0)}
    layers = [
        Layer("x", "Input", params={"shape": [4]}),
        Layer("fc1", "Affine", ["x"], {"out_shape": hidden}, initializers=dict(glorot)),
        Layer("act1", "Tanh", ["fc1"]),
        Layer("fc2", "Affine", ["act1"], {"out_shape": 3}, initializers=dict(glorot)),
        Layer("y", "Input", params={"shape": [1]}),
        Layer("loss", "SoftmaxCrossEntropy", ["fc2", "y"]),
    ]
    project = Project(name="tabular", network=Network(layers),
                      datasets=Datasets(training="train.csv", validation="valid.csv", shuffle=shuffle),
                      config=TrainingConfig(max_epoch=epochs, batch_size=batch, log_interval=monitor, seed=3,
                                            device="cpu"),
                      optimizer=Optimizer(solver=solver, learning_rate=lr))
    project.multi_gpu.workers = workers
    project.multi_gpu.scaling = scaling
    path = os.path.join(folder, name)
    save_project(project, path, backup=False)
    return path


def nnconsole(args: List[str], timeout: float = 300, check: bool = True,
              env: Optional[dict] = None) -> subprocess.CompletedProcess:
    """Run the real CLI in a subprocess (as the user and the GUI do)."""
    full_env = dict(os.environ, **(env or {}))
    full_env["PYTHONPATH"] = ROOT + os.pathsep + full_env.get("PYTHONPATH", "")
    result = subprocess.run([sys.executable, "-m", "nnconsole.engine.cli.main", *args], capture_output=True, text=True,
                            timeout=timeout, env=full_env, cwd=ROOT)
    if check and result.returncode != 0:
        raise AssertionError(f"nnconsole {' '.join(args)} exited {result.returncode}\n"
                             f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}")
    return result


def run_dir_from(output: str) -> str:
    """The run directory printed by ``nnconsole train``."""
    for line in output.splitlines():
        if line.startswith("run directory: "):
            return line.split(": ", 1)[1].strip()
    raise AssertionError(f"no run directory in output:\n{output}")


def load_h5(path: str) -> dict:
    """Parameters of an .h5 file as numpy arrays (read with nnabla's own loader)."""
    import nnabla as nn

    with nn.parameter_scope("__probe__"):
        nn.load_parameters(path)
        params = {k: v.d.copy() for k, v in nn.get_parameters(grad_only=False).items()}
    nn.clear_parameters()
    return params


def final_params(run_dir: str) -> dict:
    """The parameters a run ended with (``parameters_final.h5``)."""
    return load_h5(os.path.join(run_dir, "parameters_final.h5"))


def max_relative_error(a: dict, b: dict) -> float:
    """The largest difference between two parameter sets, relative to each parameter's magnitude in ``a``."""
    assert sorted(a) == sorted(b)
    return max(float(np.max(np.abs(a[k] - b[k])) / (np.max(np.abs(a[k])) + 1e-12)) for k in a)


def live_processes(text: str) -> list:
    """(pid, command line) of live, non-zombie processes whose command line contains ``text``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                args = fh.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{name}/stat") as fh:
                state = fh.read().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if text in args and state != "Z":
            found.append((int(name), args))
    return found


def wait_until_gone(run_dir: str, timeout: float = 30) -> float:
    """Seconds until no process of the run is left (the test fails after ``timeout``)."""
    start = time.monotonic()
    while live_processes(run_dir):
        assert time.monotonic() - start < timeout, f"left behind: {live_processes(run_dir)}"
        time.sleep(0.05)
    return time.monotonic() - start


def results_of(project: str) -> str:
    """The results folder of ``<folder>/project.yaml`` (``<folder>/results/project``)."""
    return os.path.join(os.path.dirname(project), "results", "project")


def train_in_process(project: Project, results: str) -> tuple:
    """Train ``project`` (loaded from its file) on one in-process worker to the end, as a run does;
    returns (run_dir, the training losses in order). Asserts the run finished."""
    import nnabla as nn

    from nnconsole.engine.rundir import store as runs
    from nnconsole.engine.comm.cpu import SingleComm
    from nnconsole.engine.launch.launcher import LaunchRequest, prepare_run
    from nnconsole.engine.train.trainer import Trainer
    from nnconsole.engine.rundir.launch_options import WorkerOptions

    run_dir = prepare_run(project, LaunchRequest(output=results), workers=1)
    trainer = Trainer(run_dir, SingleComm(), WorkerOptions())
    try:
        trainer.setup()
        assert trainer.run() == "finished"
    finally:
        trainer.close()
        nn.clear_parameters()
    return run_dir, [r["loss"] for r in runs.iter_metrics(run_dir, "train")]


def train_file_in_process(project_path: str) -> str:
    """Train the project file ``project_path`` on one in-process worker into ``results_of(project_path)`` (where
    the CLI puts it); returns the run directory. For the one-worker reference runs that multi-worker tests
    compare against: the same Trainer as a CLI run's worker, without a CLI launch (about 2 s each)."""

    return train_in_process(load_valid_project(project_path), results_of(project_path))[0]


def load_script(path: str, name: str = ""):
    """Import a script that is not in a package (scripts/, packaging/) by its path; ``name`` defaults to
    its file name (PyPI's ``packaging`` would shadow a plain import of packaging/)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name or os.path.splitext(os.path.basename(path))[0], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
