"""The gan_2d template under a real ``mpiexec -n 2`` (issue 17): with the logical batch kept (2 workers x 16
against 1 worker x 32, no LR scaling) both optimizers end with the 1-worker run's weights within the
keep-logical-batch tolerance of tests/system/test_multiworker.py."""
from __future__ import annotations

import pytest

from tests.support.cli import nnconsole, run_dir_from
from tests.support.training import final_params, max_relative_error, train_file_in_process
from tests.support.projects import gan_2d_project

pytestmark = pytest.mark.mpi


def test_gan_template_on_two_workers_matches_one_worker(tmp_path):
    one = final_params(train_file_in_process(gan_2d_project(str(tmp_path / "one"), 32, 1)))  # one worker, in-process
    two = final_params(run_dir_from(nnconsole(["train", gan_2d_project(str(tmp_path / "two"), 16, 2), "-q"]).stdout))
    assert sorted(one) == sorted(two) and len(one) == 8  # g1, g2, d1, d2: W and b, one set each
    assert max_relative_error(one, two) <= 1e-5
