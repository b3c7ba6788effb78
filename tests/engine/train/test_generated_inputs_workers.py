"""Generated inputs on several workers (issue 26 item 5): the gan_2d template draws z (Normal) and its constant
targets from generators; 2 workers of 16 under a real ``mpiexec -n 2`` end with the parameters and losses of 1
worker of 32 (the logical batch kept), because every row's values are keyed by its slot in the logical batch."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from nnconsole.engine.check.project_file import load_valid_project
from tests.support.projects import gan_2d_project
from tests.support.training import final_params, max_relative_error, train_file_in_process


def _losses(run_dir: str) -> list:
    with open(os.path.join(run_dir, "metrics.jsonl")) as fh:
        records = [json.loads(line) for line in fh if line.strip()]
    return [(r["type"], r["iteration"], r["loss"]) for r in records if r["type"] in ("train", "optimizer_loss")]


def test_the_gan_template_generates_z_and_its_targets(tmp_path):
    project = load_valid_project(gan_2d_project(str(tmp_path / "gan"), 32, 1))
    generated = {layer.params["variable"]: (layer.params["generator"], layer.params["generator_multiplier"])
                 for net in [project.network, *project.networks.values()] for layer in net.layers
                 if layer.type == "Input" and layer.params.get("generator", "None") != "None"}
    assert generated == {"z": ("Normal", 1.0), "one": ("Constant", 1.0), "zero": ("Constant", 0.0)}
    with open(os.path.join(os.path.dirname(project.path), project.datasets.training)) as fh:
        assert fh.readline().strip() == "x__0,x__1"  # only the real points are data


@pytest.mark.mpi
def test_two_workers_train_the_generated_gan_as_one_worker(tmp_path):
    from tests.support.cli import nnconsole, run_dir_from

    one = train_file_in_process(gan_2d_project(str(tmp_path / "one"), 32, 1))  # one worker, in-process
    two = run_dir_from(nnconsole(["train", gan_2d_project(str(tmp_path / "two"), 16, 2), "-q"]).stdout)
    assert max_relative_error(final_params(one), final_params(two)) <= 1e-5
    a, b = _losses(one), _losses(two)
    assert a and [r[:2] for r in a] == [r[:2] for r in b]
    assert np.allclose([r[2] for r in a], [r[2] for r in b], rtol=1e-5, atol=1e-6)
