"""Hostile and damaged input (issue 13, items 2, 5 and 20): every case ends in a located message
(file, field, fix) and exit code 2, never a traceback, a read outside the project or a memory blow-up.
"""
from __future__ import annotations

import os
import shutil

import pytest

from engine.project.errors import ProjectError
from engine.project.io import load_project
from tests.helpers import ROOT, nnconsole

TEMPLATE = os.path.join(ROOT, "project_templates", "iris_mlp")


@pytest.fixture
def iris(tmp_path) -> str:
    """A private copy of the iris template in ``tmp_path/iris``; returns the project path."""
    dest = tmp_path / "iris"
    shutil.copytree(TEMPLATE, dest, ignore=shutil.ignore_patterns(".nnconsole-cache", "results"))
    return str(dest / "project.yaml")


def _set(path: str, old: str, new: str) -> str:
    text = open(path).read()
    assert old in text
    with open(path, "w") as fh:
        fh.write(text.replace(old, new, 1))
    return text.replace(old, new, 1)


def _cli_refuses(args, *words: str) -> str:
    out = nnconsole(args, check=False, timeout=120)
    assert out.returncode == 2, (args, out.stdout, out.stderr)
    assert "Traceback" not in out.stdout + out.stderr, out.stderr
    for word in words:
        assert word in out.stdout + out.stderr, (word, out.stdout, out.stderr)
    return out.stdout + out.stderr


# ---- item 2: config.initial_parameters follows the dataset rule ----------------------------------------
def test_initial_parameters_outside_the_project_need_the_users_permission(iris, tmp_path):
    import nnabla as nn
    import nnabla.parametric_functions as PF

    secret = tmp_path / "secret.h5"
    with nn.parameter_scope("fc1"):
        PF.affine(nn.Variable((1, 4)), 32)
    nn.save_parameters(str(secret))
    nn.clear_parameters()
    text = _set(iris, "  seed: 0\n", "  seed: 0\n  initial_parameters: ../secret.h5\n")
    with pytest.raises(ProjectError) as info:
        load_project(iris)
    [problem] = [p for p in info.value.problems if p.path == "config.initial_parameters"]
    assert "outside the project's folder" in problem.message and "--allow-outside-data" in problem.fix
    assert problem.file == iris and problem.line == text.splitlines().index("  initial_parameters: ../secret.h5") + 1
    # The CLI refuses both validate and train (nothing read, no run folder), and honours the user's consent.
    _cli_refuses(["validate", iris], "config.initial_parameters", "--allow-outside-data")
    _cli_refuses(["train", iris, "-q"], "config.initial_parameters", "--allow-outside-data")
    assert not os.path.exists(os.path.join(os.path.dirname(iris), "results"))
    assert load_project(iris, allow_outside_data=True).config.initial_parameters == "../secret.h5"


def test_a_missing_initial_parameters_file_is_reported_by_validate(iris):
    _set(iris, "  seed: 0\n", "  seed: 0\n  initial_parameters: weights/start.h5\n")
    text = _cli_refuses(["validate", iris], iris, "config.initial_parameters", "not found")
    assert "relative to the project file" in text
    _cli_refuses(["train", iris, "-q"], "config.initial_parameters", "not found")
