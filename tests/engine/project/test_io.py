"""Project files: loading, located validation messages, migrations, atomic saves and round trips."""
from __future__ import annotations

import os
import shutil

import pytest

from nnconsole.engine.project.errors import ProjectError, UnsupportedVersionError
from nnconsole.engine.project.io import dumps_project, save_project
from nnconsole.engine.project.model import FORMAT_VERSION
from nnconsole.engine.check.project_file import load_valid_project, loads_valid_project
from tests.support.paths import DATA

FORMATS = os.path.join(DATA, "formats")


@pytest.fixture
def formats(tmp_path):
    for name in os.listdir(FORMATS):
        shutil.copy(os.path.join(FORMATS, name), tmp_path / name)
    return tmp_path


def problems_of(text: str, tmp_path, name: str = "p.yaml", **kw):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ProjectError) as info:
        load_valid_project(str(path), **kw)
    return info.value


def test_current_format_sample_loads_and_round_trips(formats):
    project = load_valid_project(str(formats / "project_v2.yaml"))
    assert project.name == "tiny-v2"
    assert project.network.layer("fc1").lr_multipliers == {"W": 1.0, "b": 2.0}
    assert project.network.layer("fc1").position == (0, 80)
    again = loads_valid_project(dumps_project(project), file=str(formats / "again.yaml"))
    assert again == project


def test_v1_sample_migrates_to_current_format(formats):
    project = load_valid_project(str(formats / "project_v1.yaml"))
    assert project.format_version == FORMAT_VERSION
    assert project.network.layer("loss").inputs == ["fc1", "y"]
    assert project.optimizer.solver == "Sgd"
    assert project.optimizer.learning_rate == pytest.approx(0.1)
    assert project.optimizer.lr_multiplier == pytest.approx(0.5)
    assert project.optimizer.lr_update_interval == 10
    assert project.multi_gpu.workers == 2
    # The migrated project has the same meaning as the v2 sample (names aside).
    v2 = load_valid_project(str(formats / "project_v2.yaml"))
    assert [(l.name, l.type, l.inputs) for l in project.network.layers] == \
        [(l.name, l.type, l.inputs) for l in v2.network.layers]


def test_loading_does_not_rewrite_an_old_file(formats):
    before = (formats / "project_v1.yaml").read_bytes()
    load_valid_project(str(formats / "project_v1.yaml"))
    assert (formats / "project_v1.yaml").read_bytes() == before


def test_newer_format_is_refused_with_its_own_error(formats):
    text = (formats / "project_v2.yaml").read_text().replace("format_version: 2", "format_version: 99")
    error = problems_of(text, formats)
    assert isinstance(error, UnsupportedVersionError)
    assert "newer nnconsole" in str(error) and ":1:" in str(error)


def test_yaml_syntax_error_names_the_line(tmp_path):
    error = problems_of("format_version: 2\nname: [unclosed\nconfig: {}\n", tmp_path)
    assert "not valid YAML" in str(error)
    assert "p.yaml:" in str(error)
    # The parser stops at line 3, where the unclosed list meets the next key.
    [problem] = error.problems
    assert problem.line == 3 and problem.file == str(tmp_path / "p.yaml")
    assert f"{tmp_path / 'p.yaml'}:3: not valid YAML" in str(error)


def test_unsafe_yaml_tags_are_refused(tmp_path):
    text = "format_version: 2\nname: !!python/object/apply:os.system ['echo pwned']\n"
    error = problems_of(text, tmp_path)
    assert "not valid YAML" in str(error)


def test_type_errors_name_path_and_line(formats):
    text = (formats / "project_v2.yaml").read_text().replace("batch_size: 8", "batch_size: eight")
    error = problems_of(text, formats)
    [problem] = error.problems
    assert problem.path == "config.batch_size"
    lines = text.splitlines()
    assert lines[problem.line - 1].strip() == "batch_size: eight"
    assert "expected an integer" in problem.message


def test_unknown_key_suggests_the_right_one(formats):
    text = (formats / "project_v2.yaml").read_text().replace("max_epoch: 3", "max_epochs: 3")
    error = problems_of(text, formats)
    assert "unknown key 'max_epochs'" in str(error) and "did you mean 'max_epoch'" in str(error)


@pytest.mark.parametrize("old,new,path,words", [
    ("batch_size: 8", "batch_size: -4", "config.batch_size", "must be >= 1"),
    ("solver: Sgd", "solver: Adamm", "optimizer.solver", "did you mean 'Adam'"),
    ("type: Affine", "type: Afine", "network.layers[1]", "Affine"),
    ("inputs: [fc1, y]", "inputs: [fc9, y]", "network.layers[3]", "fc9"),
    ("workers: 2", "workers: 0", "multi_gpu.workers", "must be >= 1"),
    ("training: train.csv", "training: missing.csv", "datasets.training", "not found"),
])
def test_semantic_errors_are_located(formats, old, new, path, words):
    text = (formats / "project_v2.yaml").read_text().replace(old, new, 1)
    assert text != (formats / "project_v2.yaml").read_text()
    error = problems_of(text, formats)
    match = [p for p in error.problems if p.path == path]
    assert match, [str(p) for p in error.problems]
    assert words in str(match[0])
    assert match[0].line is not None and match[0].file.endswith("p.yaml")


def test_shape_mismatch_is_reported_at_the_layer(formats):
    text = (formats / "project_v2.yaml").read_text().replace(
        "  - name: y\n    type: Input\n    params: {shape: [1]}",
        "  - name: y\n    type: Input\n    params: {shape: [1]}\n  - name: bad\n    type: Add2\n"
        "    inputs: [x, fc1]")
    error = problems_of(text, formats)
    bad = [p for p in error.problems if "'bad'" in p.message]
    assert bad and bad[0].path == "network.layers[3]"


def test_csv_header_must_provide_the_input_variables(formats):
    (formats / "train.csv").write_text("a__0,a__1,y\n1,2,0\n")
    error = problems_of((formats / "project_v2.yaml").read_text(), formats)
    assert any("no column for variable(s) x" in p.message for p in error.problems)


def test_save_is_atomic_and_keeps_a_backup(formats, monkeypatch):
    path = formats / "project_v2.yaml"
    project = load_valid_project(str(path))
    original = path.read_bytes()
    project.name = "renamed"
    save_project(project)
    assert (formats / "project_v2.yaml.bak").read_bytes() == original
    assert load_valid_project(str(path)).name == "renamed"

    # A failure in the middle of writing leaves the saved file as it was and no temp file behind.
    saved = path.read_bytes()
    project.name = "never written"

    def broken_replace(src, dst):
        raise OSError("disk full")
    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        save_project(project)
    monkeypatch.undo()
    assert path.read_bytes() == saved
    assert not [n for n in os.listdir(formats) if n.endswith(".tmp")]
