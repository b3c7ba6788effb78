"""The plan names the inputs generators fill (issue 26 item 5) and what N workers do with them."""
from __future__ import annotations

from nnconsole.engine.plan.explain import explain_plan
from nnconsole.engine.plan.worker_plan import make_plan
from nnconsole.engine.project.model import Datasets, Layer, Network, Project


def _project(generator: str) -> Project:
    layers = [Layer("z", "Input", params={"shape": [3], "generator": generator, "generator_multiplier": 0.5}),
              Layer("fc", "Affine", ["z"], {"out_shape": [1]}),
              Layer("t", "Input", params={"shape": [1], "variable": "y"}),
              Layer("loss", "SquaredError", ["fc", "t"])]
    return Project(network=Network(layers=layers), datasets=Datasets(training="t.csv", validation="t.csv"))


def test_the_plan_names_generated_inputs_and_their_share_per_worker():
    project = _project("Uniform")
    notes, _warnings = explain_plan(make_plan(project, workers=4, dataset_size=64), project)
    line = [n for n in notes if n.startswith("Generated inputs")]
    assert line == ["Generated inputs z (Uniform x 0.5): no dataset column is read; each of the 4 workers makes its "
                    "own rows of every logical batch, the values one worker would make for them."]
    project = _project("None")
    notes, _warnings = explain_plan(make_plan(project, workers=4, dataset_size=64), project)
    assert not [n for n in notes if "Generated" in n]
