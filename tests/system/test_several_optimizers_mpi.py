"""A two-optimizer GAN under a real ``mpiexec -n 2`` (issue 17): with the logical batch kept, the 2-worker run
ends with the 1-worker run's weights within the keep-logical-batch tolerance of tests/system/test_multiworker.py;
each optimizer's range is divided by the plan's iteration divisor."""
from __future__ import annotations

import pytest

from nnconsole.engine.project.io import save_project
from tests.support.cli import nnconsole, run_dir_from
from tests.support.training import final_params, max_relative_error, train_file_in_process
from tests.support.projects import gan_project
from nnconsole.engine.check.project_file import load_valid_project

pytestmark = pytest.mark.mpi


def _gan(folder: str, batch: int, workers: int, end_iteration: int) -> str:
    path = gan_project(folder, epochs=4, end_iteration=end_iteration)
    project = load_valid_project(path)
    project.config.batch_size = batch
    project.multi_gpu.workers, project.multi_gpu.scaling = workers, "none"
    for opt in (project.optimizer, project.optimizers[0].optimizer):
        opt.solver, opt.learning_rate, opt.solver_params = "Sgd", 0.5, {}
    return save_project(project, backup=False)


def test_two_workers_match_one_worker_with_both_optimizers(tmp_path):
    # 1 worker x batch 16 and 2 workers x batch 8 see the same samples per update; the generator's optimizer
    # stops after 5 single-worker iterations of batch 16 (10 of batch 8, divided by 2 workers).
    one = _gan(str(tmp_path / "one"), 16, 1, 5)
    two = _gan(str(tmp_path / "two"), 8, 2, 10)
    reference = final_params(train_file_in_process(one))  # one worker: the worker's Trainer, in this process
    result = final_params(run_dir_from(nnconsole(["train", two, "-q"]).stdout))
    assert sorted(result) == ["disc/affine/W", "disc/affine/b", "generator/affine/W", "generator/affine/b"]
    assert max_relative_error(reference, result) <= 1e-5
    # the check discriminates: the generator's optimizer running one more update is far outside it
    longer = final_params(train_file_in_process(_gan(str(tmp_path / "longer"), 16, 1, 6)))
    assert max_relative_error(reference, longer) > 1e-3
