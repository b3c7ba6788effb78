"""A save changes only what changed (issue 28 item 3): a hand-commented project keeps its header comment,
inline comments, block style, key order and left-out defaults; only the edited value's line differs."""
from __future__ import annotations

import difflib
import os

import pytest
import yaml

from nnconsole.engine.project.codec import project_to_dict
from nnconsole.engine.project.io import dumps_project, load_project, save_project
from nnconsole.engine.project.model import Layer

COMMENTED = """\
# My digits experiment: kept in git, edited by hand.
format_version: 3
name: hand_made   # the name shown in the title bar
network:
  layers:
  - name: x
    type: Input
    params:
      shape: [1, 8, 8]   # grey 8x8 images
  - name: fc
    type: Affine
    inputs: [x]
    params: {n_outmaps: 10}
  # the loss comes last
  - name: loss
    type: SoftmaxCrossEntropy
    inputs: [fc, y]
  - name: y
    type: Input
    params:
      shape: [1]
datasets:
  # relative to this file
  training: train.csv
  validation: valid.csv
config:
  batch_size: 32    # fits the laptop
  max_epoch: 10
optimizer:
  solver: 'Adam'
  learning_rate: 0.001
"""


def write(tmp_path, text=COMMENTED):
    path = os.path.join(str(tmp_path), "project.yaml")
    with open(path, "w") as fh:
        fh.write(text)
    return path


def changed_lines(before: str, after: str):
    return [line for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def test_changing_one_value_changes_one_line(tmp_path):
    path = write(tmp_path)
    project = load_project(path)
    project.config.max_epoch = 25
    save_project(project)
    after = open(path).read()
    assert changed_lines(COMMENTED, after) == ["-  max_epoch: 10", "+  max_epoch: 25"]
    assert project_to_dict(load_project(path)) == project_to_dict(project)


def test_nothing_changed_writes_the_same_text(tmp_path):
    path = write(tmp_path)
    save_project(load_project(path))
    assert open(path).read() == COMMENTED


def test_comments_on_a_changed_value_stay(tmp_path):
    path = write(tmp_path)
    project = load_project(path)
    project.config.batch_size = 64
    project.optimizer.solver = "Momentum"
    save_project(project)
    after = open(path).read()
    assert "  batch_size: 64    # fits the laptop" in after
    assert "  solver: 'Momentum'" in after  # the quoting style of the value it replaces
    assert after.startswith("# My digits experiment")


def test_a_default_the_user_sets_is_added_after_its_neighbour_and_others_stay_out(tmp_path):
    path = write(tmp_path)
    project = load_project(path)
    project.config.seed = 1234
    save_project(project)
    after = open(path).read()
    added = [line for line in changed_lines(COMMENTED, after) if line.startswith("+")]
    removed = [line for line in changed_lines(COMMENTED, after) if line.startswith("-")]
    assert removed == [] and added == ["+  seed: 1234"]
    assert project_to_dict(load_project(path)) == project_to_dict(project)


def test_added_and_removed_layers_touch_only_their_lines(tmp_path):
    path = write(tmp_path)
    project = load_project(path)
    project.network.layers.insert(2, Layer(name="relu", type="ReLU", inputs=["fc"]))
    project.network.layer("loss").inputs = ["relu", "y"]
    save_project(project)
    after = open(path).read()
    assert "  # the loss comes last" in after and "shape: [1, 8, 8]   # grey 8x8 images" in after
    assert "  - name: relu\n    type: ReLU\n    inputs: [fc]\n" in after
    assert project_to_dict(load_project(path)) == project_to_dict(project)
    project.network.layers = [layer for layer in project.network.layers if layer.name != "y"]
    project.network.layer("loss").inputs = ["relu"]
    save_project(project)
    text = open(path).read()
    assert "name: y\n" not in text and "# relative to this file" in text
    assert project_to_dict(load_project(path)) == project_to_dict(project)


def test_a_new_file_is_block_style_with_flow_leaf_lists(tmp_path):
    project = load_project(write(tmp_path))
    text = dumps_project(project)
    data = yaml.safe_load(text)
    assert data["config"]["batch_size"] == 32
    assert "\ndatasets:\n  training: train.csv\n" in text and "\nconfig:\n  max_epoch: 10\n" in text
    assert "shape: [1, 8, 8]" in text
    out = save_project(project, os.path.join(str(tmp_path), "copy.yaml"))
    assert "# My digits experiment" in open(out).read()  # save as keeps the file's comments too


def test_file_mode_is_kept(tmp_path):
    path = write(tmp_path)
    os.chmod(path, 0o640)
    project = load_project(path)
    project.config.max_epoch = 3
    save_project(project)
    assert os.stat(path).st_mode & 0o777 == 0o640


@pytest.mark.slow
def test_every_template_saves_unchanged_and_reads_back_after_an_edit(tmp_path):
    from nnconsole.templates import list_templates, template_path

    for template in list_templates():
        text = open(template_path(template.name) / "project.yaml").read()
        path = os.path.join(str(tmp_path), f"{template.name}.yaml")
        with open(path, "w") as fh:
            fh.write(text)
        project = load_project(path)
        save_project(project)
        assert open(path).read() == text, template.name
        project.config.max_epoch += 1
        project.network.layers[-1].position = (12.5, 7.0)
        save_project(project)
        lines = changed_lines(text, open(path).read())
        assert all("max_epoch" in line or "position: [12.5, 7.0]" in line for line in lines if line[0] == "+"), lines
        assert len([line for line in lines if line[0] == "-"]) <= 3, lines  # (a flow mapping over 2 lines)
        assert project_to_dict(load_project(path)) == project_to_dict(project)


def test_small_and_large_floats_read_back_as_numbers(tmp_path):
    path = write(tmp_path)
    project = load_project(path)
    project.optimizer.solver_params = {"eps": 1e-08, "beta1": 0.9}
    project.optimizer.learning_rate = 1e20
    save_project(project)
    text = open(path).read()
    data = yaml.safe_load(text)  # a YAML 1.1 reader: '1e-08' would be a string there
    assert data["optimizer"]["solver_params"]["eps"] == pytest.approx(1e-08, rel=1e-12)
    assert data["optimizer"]["learning_rate"] == pytest.approx(1e20, rel=1e-12)
    assert yaml.safe_load(dumps_project(project))["optimizer"]["solver_params"]["eps"] == pytest.approx(1e-08)


def test_an_empty_quoted_string_given_a_value_is_written_plain(tmp_path):
    path = write(tmp_path, COMMENTED.replace("datasets:\n", "description: ''\ndatasets:\n", 1))
    project = load_project(path)
    project.description = "digits, by hand"
    save_project(project)
    assert "description: digits, by hand\n" in open(path).read()
