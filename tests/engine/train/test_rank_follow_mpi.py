"""Issue 31 under a real ``mpiexec -n 2`` on one host: while the host's first rank builds the dataset cache
behind the first epoch, the other rank follows that build chunk by chunk (engine/data/build_follow.py) instead
of waiting on the build lock for the whole entry. Both ranks reach their first iteration before the build ends
(an iteration's all-reduce needs both, so rank 0's first training record proves it for rank 1 too), rank 1's
log says it followed, and the parameters equal those of a warm run (the same pixels)."""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from nnconsole.engine.rundir import store as runs
from nnconsole.engine.test_seams import SEAMS_VARIABLE
from tests.support.image_projects import cycled_image_project
from tests.support.training import final_params, results_of
from tests.support.runs import build_end_and_first_train

FILES = 700  # distinct PNGs: three chunks of the build (256 files each), decoded in the first epoch's order


@pytest.mark.mpi
@pytest.mark.slow
def test_two_ranks_train_while_the_host_builds_and_end_as_a_warm_run(tmp_path):
    from tests.support.cli import nnconsole, run_dir_from

    project = cycled_image_project(str(tmp_path / "p"), rows=FILES, files=FILES, epochs=1, batch=16, workers=2)
    seams = {SEAMS_VARIABLE: json.dumps({"decode_delay_ms": 6})}  # about 4 s for the training set's build
    cold = run_dir_from(nnconsole(["train", project, "-q"], env=seams).stdout)
    first_train, built, kinds = build_end_and_first_train(cold)
    assert first_train < built, kinds
    rank1 = Path(cold, "logs", "rank1.log").read_text(encoding="utf-8")
    assert re.search(r"training set: its dataset cache is being built by another process of the host", rank1), rank1

    shutil.move(results_of(project), str(tmp_path / "cold_results"))
    warm = run_dir_from(nnconsole(["train", project, "-q"]).stdout)
    assert not [r for r in runs.iter_metrics(warm, None) if r.get("type") == "dataset_cache"
                and r["done"] < r["total"]], "the warm run built again"
    assert "being built" not in Path(warm, "logs", "rank1.log").read_text(encoding="utf-8")
    cold_params = final_params(os.path.join(tmp_path, "cold_results", Path(cold).name))
    warm_params = final_params(warm)
    assert sorted(cold_params) == sorted(warm_params)
    for name in cold_params:
        np.testing.assert_array_equal(cold_params[name], warm_params[name], err_msg=name)
