"""Training runs in this process, as a run's worker does, and comparing the parameters runs end with.

The multi-worker tests compare a CLI run under mpiexec against a one-worker reference trained here: the
same Trainer as a CLI run's worker, without a CLI launch (about 2 s each).
"""
from __future__ import annotations

import os

import numpy as np

from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.project.model import Project


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
    the CLI puts it); returns the run directory."""
    return train_in_process(load_valid_project(project_path), results_of(project_path))[0]


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
