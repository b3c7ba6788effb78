"""Half-precision CPU all-reduce (issue 20, multi_gpu.allreduce_precision: half): safe scale, 2 ranks, training."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from nnconsole.engine.launch import launcher as launch
from nnconsole.engine.comm.half import FLOAT16_MAX, safe_scale
from nnconsole.engine.project.io import save_project
from tests.support.cli import nnconsole, run_dir_from
from tests.support.paths import MPI_SCRIPTS, ROOT
from tests.support.projects import tabular_project
from tests.support.training import final_params, max_relative_error
from nnconsole.engine.check.project_file import load_valid_project


def test_the_scale_keeps_the_sum_of_every_rank_in_float16():
    assert safe_scale(1.0, 2) == 2.0 ** 14  # 2 x 1 x 2**14 = 32768 <= 65504 < 65536
    assert safe_scale(4e4, 2) == 0.5 and 2 * 4e4 * 0.5 <= FLOAT16_MAX
    assert safe_scale(1e-30, 8) == 2.0 ** 100  # tiny gradients: scaled up, bounded
    for top, ranks in [(3e-5, 2), (123.4, 3), (65504.0, 1), (7.0, 64)]:
        s = safe_scale(top, ranks)
        assert ranks * top * s <= FLOAT16_MAX < ranks * top * s * 2 and s == 2.0 ** round(__import__("math").log2(s))
    assert safe_scale(0.0, 2) == 0.0 and safe_scale(float("inf"), 2) == 0.0 and safe_scale(float("nan"), 2) == 0.0


@pytest.mark.mpi
@pytest.mark.parametrize("bucket_mb", [0.0001, 2.0])
def test_float16_allreduce_stays_within_its_tolerance_of_float32_on_two_ranks(bucket_mb):
    """Each message within 2**-10 of its largest |value| (1e-6 .. 4e4, whose float16 sum would overflow
    unscaled); NaN falls back to float32; 30 Momentum steps end within 1e-3 of the float32 run, bit-identical
    on both ranks."""
    cmd = [launch.find_mpiexec(), "-n", "2", "--oversubscribe", sys.executable,
           os.path.join(MPI_SCRIPTS, "half_allreduce_check.py"), str(bucket_mb)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=launch.mpi_environment(), cwd=ROOT)
    assert out.returncode == 0, out.stderr
    result = json.loads([line for line in out.stdout.splitlines() if line.startswith("{")][-1])
    assert result["ok"] and result["size"] == 2, result
    assert result["errors"]["mean"] <= 2.0 ** -10 and result["errors"]["training"] <= 1e-3


@pytest.mark.mpi
@pytest.mark.slow
def test_two_workers_train_with_the_setting_as_with_float32(tmp_path):
    """The project setting reaches the workers: `allreduce_precision: half` on 2 workers ends within 1e-3 of
    the float32 run, and not bit-equal to it (the float16 path really ran)."""
    runs = {}
    for precision in ("float", "half"):
        path = tabular_project(str(tmp_path / precision), n=64, batch=8, epochs=4, lr=0.2, scaling="none", workers=2)
        project = load_valid_project(path, check_datasets=False)
        project.multi_gpu.allreduce_precision = precision
        save_project(project, path, backup=False)
        runs[precision] = final_params(run_dir_from(nnconsole(["train", path, "-q"]).stdout))
    error = max_relative_error(runs["float"], runs["half"])
    assert 0 < error <= 1e-3, error
