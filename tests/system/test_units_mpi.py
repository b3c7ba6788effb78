"""A project with a Unit under a real ``mpiexec -n 2`` (issue 17): the 2-worker run (logical batch kept) ends with
the 1-worker run's weights, named as the unit's expansion names them, within the keep-logical-batch tolerance."""
from __future__ import annotations

import pytest

from nnconsole.engine.project.io import save_project
from tests.support.cli import nnconsole, run_dir_from
from tests.support.training import final_params, max_relative_error, train_file_in_process
from tests.support.projects import unit_project
from nnconsole.engine.check.project_file import load_valid_project

pytestmark = pytest.mark.mpi


def _units(folder, batch: int, workers: int) -> str:
    project = load_valid_project(unit_project(folder))
    project.config.batch_size, project.config.max_epoch = batch, 2
    project.multi_gpu.workers, project.multi_gpu.scaling = workers, "none"
    project.optimizer.solver, project.optimizer.learning_rate = "Sgd", 0.5
    return save_project(project, backup=False)


def test_two_workers_match_one_worker_on_a_unit_project(tmp_path):
    reference = final_params(train_file_in_process(_units(tmp_path / "one", 16, 1)))  # one worker, in-process
    result = final_params(run_dir_from(nnconsole(["train", _units(tmp_path / "two", 8, 2), "-q"]).stdout))
    assert sorted(result) == ["fc2/affine/W", "fc2/affine/b", "hidden/fc/affine/W", "hidden/fc/affine/b"]
    assert max_relative_error(reference, result) <= 1e-5
