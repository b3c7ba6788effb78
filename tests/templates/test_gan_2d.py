"""The gan_2d template (issue 17): two networks and two optimizers sharing weights through scopes. It
validates, trains on one worker with the generator's points moving from around (0, 0) to within 0.5 of the
real points' mean (2, -1), and exports an .nntxt with both optimizers and an .nnp."""
from __future__ import annotations

import os

import numpy as np
import pytest

from nnconsole.engine.project.templates import create_from_template
from tests.support.training import train_in_process
from nnconsole.engine.check.project_file import load_valid_project

REAL_MEAN = np.array([2.0, -1.0])


def generated_points(project, parameters: str = "") -> np.ndarray:
    """500 points of the Generator network's g2 layer on fixed noise (fresh weights without ``parameters``)."""
    import nnabla as nn

    from nnconsole.engine.runtime.graph import build_graph

    nn.clear_parameters()
    if parameters:
        nn.load_parameters(parameters)
    graph = build_graph(project.networks["Generator"], 500, "runtime", rng=np.random.RandomState(0))
    graph.generated["z"][0].d = np.random.RandomState(5).randn(500, 2)  # z is generated (Normal), not data
    graph.outputs["g2"].forward()
    points = graph.outputs["g2"].d.copy()
    nn.clear_parameters()
    return points


@pytest.mark.slow
def test_gan_template_trains_its_generator_towards_the_real_points_and_exports(tmp_path):
    from nnconsole.engine.interop.files import export_nntxt

    path = create_from_template("gan_2d", str(tmp_path / "gan"))
    project = load_valid_project(path)  # validates: networks, optimizers, shared scopes, datasets
    assert list(project.networks) == ["Generator"] and [o.network for o in project.optimizers] == ["Generator"]
    before = np.linalg.norm(generated_points(project).mean(0) - REAL_MEAN)
    run_dir, losses = train_in_process(project, str(tmp_path / "gan" / "results"))
    after = np.linalg.norm(generated_points(project, os.path.join(run_dir, "parameters_final.h5")).mean(0)
                           - REAL_MEAN)
    assert before > 1.5 and after < 0.5, (before, after)
    assert np.all(np.isfinite(losses)) and os.path.isfile(os.path.join(run_dir, "model_final.nnp"))
    out = str(tmp_path / "gan.nntxt")
    export_nntxt(project, out)
    assert open(out).read().count("optimizer {") == 2
    from nnabla.utils.load import load

    info = load([out], prepare_data_iterator=False, batch_size=4)  # nnabla's loader makes z, one and zero itself
    made = {name: sorted(v.name for v in o.generator_assign) for name, o in info.optimizers.items()}
    assert made == {"Optimizer": ["one", "z", "zero"], "Optimizer_G": ["one", "z"]}
