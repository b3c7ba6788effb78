"""The gan_2d template under a real ``mpiexec -n 2`` (issue 17): with the logical batch kept (2 workers x 16
against 1 worker x 32, no LR scaling) both optimizers end with the 1-worker run's weights within the
keep-logical-batch tolerance of tests/test_multiworker.py."""
from __future__ import annotations

import pytest

from nnconsole.engine.project.io import save_project
from nnconsole.engine.project.templates import create_from_template
from tests.helpers import final_params, max_relative_error, nnconsole, run_dir_from, train_file_in_process
from nnconsole.engine.check.project_file import load_valid_project

pytestmark = pytest.mark.mpi


def _gan(folder: str, batch: int, workers: int) -> str:
    project = load_valid_project(create_from_template("gan_2d", folder))
    project.config.max_epoch, project.config.batch_size, project.config.device = 2, batch, "cpu"
    project.multi_gpu.workers, project.multi_gpu.scaling = workers, "none"
    return save_project(project, backup=False)


def test_gan_template_on_two_workers_matches_one_worker(tmp_path):
    one = final_params(train_file_in_process(_gan(str(tmp_path / "one"), 32, 1)))  # one worker, in-process
    two = final_params(run_dir_from(nnconsole(["train", _gan(str(tmp_path / "two"), 16, 2), "-q"]).stdout))
    assert sorted(one) == sorted(two) and len(one) == 8  # g1, g2, d1, d2: W and b, one set each
    assert max_relative_error(one, two) <= 1e-5
