"""Layer properties marked searched (``layers[i].search``, NNC's per-property Search flag; issue 29): validation
names every bad field at its line, a trial draws them as it draws the ``search`` section's params, and
``nnconsole search`` on an NNC project whose Argument is marked Search varies it across trials."""
from __future__ import annotations

import glob
import json
import os
import shutil

import optuna
import pytest
import yaml

from nnconsole import templates as project_templates
from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.interop.sdcproj.importer import import_sdcproj
from nnconsole.engine.project.errors import ProjectError
from nnconsole.engine.project.io import save_project
from nnconsole.engine.project.model import Search, SearchParam, SearchRange
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.protocol import TRIAL_FILE
from nnconsole.engine.search.space import design_trial
from tests.support.cli import nnconsole
from tests.support.nnc_files import searched_argument_project


def _digits(tmp_path, search_of: dict, section: dict = None) -> str:
    """The digits_search template with ``search_of`` ({layer: {property: range}}) and ``section`` as its
    search section (None: no section)."""
    folder = tmp_path / "p"
    shutil.copytree(project_templates.template_path("digits_search"), folder)
    path = folder / "project.yaml"
    data = yaml.safe_load(path.read_text())
    for layer in data["network"]["layers"]:
        if layer["name"] in search_of:
            layer["search"] = search_of[layer["name"]]
    if section is None:
        data.pop("search")
    else:
        data["search"] = section
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def _problems(path: str):
    with pytest.raises(ProjectError) as err:
        load_valid_project(path)
    return {p.path: p for p in err.value.problems}


def test_every_bad_field_of_a_searched_property_is_named_at_its_line(tmp_path):
    path = _digits(tmp_path, {"fc1": {"out_shape": {"kind": "int", "low": 128, "high": 16}},
                              "conv1": {"outmaps": {"kind": "int", "low": 2.5, "high": 32},
                                        "units": {"kind": "int", "low": 1, "high": 4}},
                              "conv2": {"outmaps": {"kind": "cubic", "low": 8, "high": 64}}})
    problems = _problems(path)
    fc1 = [line.strip() for line in open(path)].index("- name: fc1")
    assert "high 16 must be above low 128" in problems["network.layers[7].search.out_shape.high"].message
    assert problems["network.layers[7].search.out_shape.high"].line > fc1 + 1
    assert "must be a whole number, got 2.5" in problems["network.layers[1].search.outmaps.low"].message
    missing = problems["network.layers[1].search.units"]
    assert "layer 'conv1' (Convolution) has no property 'units'" in missing.message and "conv1" in missing.fix
    assert "unknown kind 'cubic'" in problems["network.layers[4].search.outmaps.kind"].message


def test_a_range_that_is_not_a_number_is_named(tmp_path):
    path = _digits(tmp_path, {"conv1": {"outmaps": {"kind": "int", "low": "many", "high": 32}}})
    problem = _problems(path)["network.layers[1].search.outmaps.low"]
    assert "expected a number, got 'many'" in problem.message and problem.line


def test_a_property_both_marked_and_listed_is_refused(tmp_path):
    section = {"params": [{"target": "layers.fc1.out_shape", "kind": "int", "low": 16, "high": 64}], "trials": 2}
    path = _digits(tmp_path, {"fc1": {"out_shape": {"kind": "int", "low": 16, "high": 128}}}, section)
    problem = _problems(path)["network.layers[7].search.out_shape"]
    assert "listed in search.params[0] too" in problem.message


def test_a_searched_property_alone_is_a_search(tmp_path):
    path = _digits(tmp_path, {"fc1": {"out_shape": {"kind": "int", "low": 16, "high": 128}}})
    assert load_valid_project(path).network.layer("fc1").search["out_shape"] == SearchRange("int", 16, 128)
    empty = _digits(tmp_path / "e", {}, {"trials": 2})
    assert "the search varies nothing" in _problems(empty)["search.params"].message


def test_a_trial_draws_each_searched_property(tmp_path):
    project = import_sdcproj(searched_argument_project(tmp_path / "nnc")).project
    project.network.layer("Affine").params["out_shape"] = [3]
    project.network.layer("Tanh")  # the hidden layer's size is the Argument's
    search = Search(params=[SearchParam("optimizer.learning_rate", "log_float", 1e-3, 1.0)])
    trial = optuna.trial.FixedTrial({"optimizer.learning_rate": 0.01, "layers.Units.value": 12})
    design = design_trial(project, search, trial, [])
    assert design.values == {"optimizer.learning_rate": 0.01, "layers.Units.value": 12}
    assert design.project.network.layer("Units").params["value"] == "12"  # the Argument's text, as NNC's
    assert project.network.layer("Units").params["value"] == "8"  # the user's project is not changed
    assert design.project.optimizer.learning_rate == 0.01


def test_search_varies_an_imported_nnc_argument_marked_search_across_trials(tmp_path):
    project = import_sdcproj(searched_argument_project(tmp_path / "nnc", value="8")).project
    assert project.search is None  # NNC's structure search is off: the flag alone makes the search
    path = save_project(project, str(tmp_path / "nnc" / "project.yaml"))
    out = nnconsole(["search", path, "--trials", "3", "--epochs", "1", "--device", "cpu"], timeout=600)
    assert "[3/3 done" in out.stdout, out.stdout + out.stderr  # the third trial trained, or repeated one that did
    values = []
    for trial_file in sorted(glob.glob(os.path.join(runs.results_root(path), "*", TRIAL_FILE))):
        with open(trial_file, encoding="utf-8") as f:
            values.append(json.load(f)["params"]["layers.Units.value"])
    # a value drawn again is a duplicate candidate, reported as the earlier trial's and not trained again
    assert 2 <= len(values) <= 3 and all(2 <= v <= 16 for v in values) and len(set(values)) == len(values), values
    for trial_file in glob.glob(os.path.join(runs.results_root(path), "*", TRIAL_FILE)):
        run_dir = os.path.dirname(trial_file)
        with open(trial_file, encoding="utf-8") as f:
            drawn = json.load(f)["params"]["layers.Units.value"]
        snapshot = yaml.safe_load(open(os.path.join(run_dir, "project.yaml"), encoding="utf-8"))
        units = [layer for layer in snapshot["network"]["layers"] if layer["name"] == "Units"][0]
        assert units["params"]["value"] == str(drawn)  # the trial trained the value it drew
