"""NNC's structure-search policy applied to the templates' networks: every candidate a trial trains passes the
project checks (shapes included), the sampler's draws reach every kind of change, and multiply-adds follow
the engine's count (issue 29)."""
from __future__ import annotations

import optuna
import pytest

from nnconsole import templates as project_templates
from nnconsole.engine.check.project_file import validate
from nnconsole.engine.project.io import load_project
from nnconsole.engine.project.model import Search
from nnconsole.engine.search.mutations import SIZE_RULE, candidate_problems, multiply_adds, mutate, sites
from nnconsole.engine.search.policy import PolicyError, read_policy
from nnconsole.engine.search.space import design_trial

SINGLE_NETWORK = [t.name for t in project_templates.list_templates()
                  if not load_project(str(t.project_file)).networks]


def test_nnc_policy_is_read_with_every_rule():
    rules = {r.name: r for r in read_policy()}
    assert {"RemoveActivation", "InsertBatchNormalization", "InsertConvolution", "Branch"} <= set(rules)
    assert rules["InsertAffine"].actions[1] == ("InsertLayer", ("*SmallerAffine",))


def test_a_broken_policy_names_file_and_section(tmp_path):
    path = tmp_path / "p.ini"
    path.write_text("[Mine]\nCond=Affine\nAction=Explode\n")
    with pytest.raises(PolicyError, match=r"p.ini: \[Mine\] Action 'Explode'"):
        read_policy(str(path))


@pytest.mark.parametrize("name", SINGLE_NETWORK)
def test_every_trained_candidate_passes_the_project_checks(name):
    project = load_project(str(project_templates.template_path(name) / "project.yaml"))
    search = Search(structure=True, max_mutations=3)
    rules = read_policy()
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    changed = 0
    for _ in range(25):
        trial = study.ask()
        design = design_trial(project, search, trial, rules)
        problems = [p for p in validate(design.project, datasets=False) if p.severity == "error"]
        assert not problems, (design.changes, [str(p) for p in problems])
        assert design.multiply_adds == multiply_adds(design.project)
        changed += bool(design.changes)
        study.tell(trial, 0.5)
    assert changed >= 10  # most trials change the network: the test is not vacuous


def test_rejected_candidates_are_the_ones_shape_inference_refuses():
    project = load_project(str(project_templates.template_path("digits_cnn") / "project.yaml"))
    pooling = next(r for r in read_policy() if r.name == "InsertPooling")
    after_affine = mutate(project.network, pooling, "fc1", 0)  # a 2-D pooling on a vector
    assert any("MaxPooling" in p for p in candidate_problems(project, after_affine))
    halved = mutate(project.network, SIZE_RULE, "conv2", 0)
    assert not candidate_problems(project, halved)
    assert halved.layer("conv2").params["outmaps"] == 8  # variant 0: a quarter
    assert multiply_adds(project, halved) < multiply_adds(project)
    assert "fc2" not in sites(project.network, SIZE_RULE)  # the output layer keeps its size
    activation = next(r for r in read_policy() if r.name == "InsertActivation")
    assert sites(project.network, activation) == ["conv1", "conv2", "fc1"]  # nothing between fc2 and the loss
