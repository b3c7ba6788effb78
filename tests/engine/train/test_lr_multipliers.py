"""Per-parameter learning-rate multipliers are honoured in training (NNC's W.LRateMultiplier)."""
from __future__ import annotations

import os
from typing import Optional

import numpy as np
import pytest
import yaml

from tests.support.projects import tabular_project
from tests.support.training import load_h5, train_in_process
from nnconsole.engine.check.project_file import load_valid_project


def one_update(tmp_path, name: str, multipliers: dict, initial: Optional[dict] = None) -> dict:
    """Final parameters after exactly one SGD update with fc2's multipliers set as given.

    ``initial`` (name -> array), when given, is where training starts instead of the initializers.
    The project is loaded from its file and trained by the run's own Trainer in this process (the CLI's
    launcher and worker start-up, 3 s a run, are covered by the end-to-end tests).
    """
    path = tabular_project(str(tmp_path / name), n=8, batch=8, epochs=1, solver="Sgd", lr=0.5)
    data = yaml.safe_load(open(path))
    for layer in data["network"]["layers"]:
        if layer["name"] == "fc2":
            layer["lr_multipliers"] = multipliers
    if initial is not None:
        import nnabla as nn

        nn.save_parameters(str(tmp_path / name / "initial.h5"),
                           {k: nn.Variable.from_numpy_array(v, need_grad=True) for k, v in initial.items()})
        data["config"]["initial_parameters"] = "initial.h5"
    yaml.safe_dump(data, open(path, "w"), sort_keys=False)
    run_dir, _ = train_in_process(load_valid_project(path), str(tmp_path / name / "results"))
    return load_h5(os.path.join(run_dir, "parameters_final.h5"))


@pytest.mark.slow
def test_multiplier_scales_the_step_and_zero_freezes(tmp_path):
    frozen = one_update(tmp_path, "frozen", {"W": 0.0, "b": 0.0})  # fc2 keeps its initial values
    plain = one_update(tmp_path, "plain", {"W": 1.0, "b": 1.0})
    doubled = one_update(tmp_path, "doubled", {"W": 1.0, "b": 2.0})
    step_plain = plain["fc2/affine/b"] - frozen["fc2/affine/b"]
    step_doubled = doubled["fc2/affine/b"] - frozen["fc2/affine/b"]
    assert np.abs(step_plain).max() > 1e-4
    np.testing.assert_allclose(step_doubled, 2 * step_plain, rtol=1e-5, atol=1e-7)
    # Parameters without a multiplier take the plain step in both runs.
    np.testing.assert_allclose(doubled["fc2/affine/W"], plain["fc2/affine/W"], rtol=1e-6)
    np.testing.assert_allclose(doubled["fc1/affine/W"], plain["fc1/affine/W"], rtol=1e-6)
    # Multiplier 0 freezes W and b where they started (b's initializer is the constant 0) ...
    np.testing.assert_array_equal(frozen["fc2/affine/b"], 0.0)
    started = one_update(tmp_path, "frozen_from_known", {"W": 0.0, "b": 0.0}, initial=plain)
    np.testing.assert_array_equal(started["fc2/affine/W"], plain["fc2/affine/W"])
    np.testing.assert_array_equal(started["fc2/affine/b"], plain["fc2/affine/b"])
    assert np.abs(started["fc1/affine/W"] - plain["fc1/affine/W"]).max() > 1e-4  # the others still train
    # ... while multiplier 1 moves W away from that same start.
    assert np.abs(plain["fc2/affine/W"] - frozen["fc2/affine/W"]).max() > 1e-4
