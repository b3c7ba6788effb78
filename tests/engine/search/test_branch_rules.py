"""Issue 29, NNC's branch rules of the structure-search policy: ``Branch`` makes a residual connection around a
convolution (identity when the shapes agree, else a 1x1 projection) and ``RemoveBranch`` (``RemoveUntilJoin``)
removes one path of a branch up to its join; each candidate passes the shape checks, and the sampler reaches
both rules."""
from __future__ import annotations

import copy

import optuna

from nnconsole import templates as project_templates
from nnconsole.engine.project.io import load_project
from nnconsole.engine.project.model import Search
from nnconsole.engine.search.mutations import candidate_problems, multiply_adds, mutate, rule_table, sites
from nnconsole.engine.search.policy import read_policy
from nnconsole.engine.search.reuse import design_digest
from nnconsole.engine.search.space import design_trial

RULES = {r.name: r for r in read_policy()}


def _project(name: str = "digits_search"):
    return load_project(str(project_templates.template_path(name) / "project.yaml"))


def _added(before, after) -> list:
    names = set(before.names())
    return [layer for layer in after.layers if layer.name not in names]


def test_branch_around_a_convolution_of_another_shape_adds_a_projection():
    project = _project()
    assert sites(project.network, RULES["Branch"]) == ["conv1", "conv2"]
    net = mutate(project.network, RULES["Branch"], "conv2", 0)  # (16, 4, 4) in, (32, 4, 4) out
    assert not candidate_problems(project, net)
    new = {layer.type: layer for layer in _added(project.network, net)}
    assert set(new) == {"Add2", "Convolution"}
    projection, add = new["Convolution"], new["Add2"]
    assert projection.inputs == ["pool1"] and projection.params["outmaps"] == 32
    assert projection.params["kernel"] == [1, 1] and projection.params["stride"] == [1, 1]
    assert add.inputs == ["conv2", projection.name] and net.layer("relu2").inputs == [add.name]
    # the projection's multiply-adds (16 x 32 x 4 x 4, its bias not counted) are the only ones added
    assert multiply_adds(project, net) - multiply_adds(project) == 16 * 32 * 4 * 4


def test_branch_with_equal_shapes_is_an_identity_shortcut():
    project = _project()
    project.network.layer("conv2").params["outmaps"] = 16  # (16, 4, 4) in and out
    net = mutate(project.network, RULES["Branch"], "conv2", 0)
    assert not candidate_problems(project, net)
    (add,) = _added(project.network, net)
    assert add.type == "Add2" and add.inputs == ["conv2", "pool1"]


def test_remove_branch_removes_either_path_up_to_the_join():
    project = _project()
    assert sites(project.network, RULES["RemoveBranch"]) == []  # no branch yet
    branched = mutate(project.network, RULES["Branch"], "conv2", 0)
    add = next(layer for layer in branched.layers if layer.type == "Add2")
    assert sites(branched, RULES["RemoveBranch"]) == [add.name]
    without_shortcut = mutate(branched, RULES["RemoveBranch"], add.name, 1)
    assert not candidate_problems(project, without_shortcut)
    assert design_digest(without_shortcut, {}) == design_digest(project.network, {})  # the network it was
    without_main = mutate(branched, RULES["RemoveBranch"], add.name, 0)  # conv2's path removed: the projection stays
    assert not candidate_problems(project, without_main)
    assert "conv2" not in without_main.names() and "Add2" not in {layer.type for layer in without_main.layers}
    assert without_main.layer("relu2").inputs[0].startswith("convolution_s")


def test_remove_branch_on_a_resnet_template_keeps_the_network_sound():
    project = _project("shapes_resnet")
    (join,) = sites(project.network, RULES["RemoveBranch"])
    assert join == "residual"
    for variant in (0, 1):
        net = mutate(project.network, RULES["RemoveBranch"], join, variant)
        assert not candidate_problems(project, net), variant
        assert "residual" not in net.names()
        assert multiply_adds(project, net) <= multiply_adds(project)
    assert "bn3" not in mutate(project.network, RULES["RemoveBranch"], join, 0).names()  # the conv path went
    assert "bn3" in mutate(project.network, RULES["RemoveBranch"], join, 1).names()  # the shortcut went


def test_the_loss_and_other_two_input_layers_are_no_joins():
    project = _project()
    assert "loss" not in sites(project.network, RULES["RemoveBranch"])
    assert "fc2" not in sites(project.network, RULES["Branch"])


def test_the_sampler_draws_branch_rules_and_each_candidate_passes_the_checks():
    project = _project()
    names = [name for name, _ in rule_table(read_policy(), project.network)]
    assert "Branch" in names and "RemoveBranch" in names  # removal offered: a Branch can make one
    search = Search(structure=True, max_mutations=3)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=3))
    seen = set()
    for _ in range(120):
        trial = study.ask()
        design = design_trial(copy.deepcopy(project), search, trial, read_policy())
        assert not candidate_problems(project, design.project.network)
        seen |= {change.split(" at ")[0] for change in design.changes}
        study.tell(trial, 0.5)
    assert {"Branch", "RemoveBranch"} <= seen, seen


def test_branch_around_a_depthwise_convolution_is_an_identity_shortcut():
    project = _project()
    conv2 = project.network.layer("conv2")
    conv2.type, conv2.params, conv2.initializers = "DepthwiseConvolution", {"kernel": [3, 3], "pad": [1, 1],
                                                                           "stride": [1, 1]}, {}
    assert not candidate_problems(project, project.network)
    assert "conv2" in sites(project.network, RULES["Branch"])
    net = mutate(project.network, RULES["Branch"], "conv2", 0)
    assert not candidate_problems(project, net)
    (add,) = _added(project.network, net)
    assert add.inputs == ["conv2", "pool1"]


def test_remove_branch_of_a_concatenate_join():
    project = _project()
    net = copy.deepcopy(project.network)
    concat = copy.deepcopy(net.layer("relu2"))
    concat.name, concat.type, concat.inputs, concat.params = "cat", "Concatenate", ["conv2", "pool1"], {"axis": 0}
    net.layers.insert(net.layers.index(net.layer("relu2")), concat)
    net.layer("relu2").inputs = ["cat"]
    assert not candidate_problems(project, net)
    assert sites(net, RULES["RemoveBranch"]) == ["cat"]
    removed = mutate(net, RULES["RemoveBranch"], "cat", 0)  # the conv2 path
    assert not candidate_problems(project, removed)
    assert "cat" not in removed.names() and "conv2" not in removed.names()
    assert removed.layer("relu2").inputs == ["pool1"]
