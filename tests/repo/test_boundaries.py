"""The import boundaries (pyproject.toml's import-linter contracts, scripts/lint_imports.py) and ruff's rules.

Each contract is shown to catch its violation in a copy of the tree, so a contract that checks nothing
(a misspelt module, a mapping the linter cannot see) fails here.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from tests.support.paths import ROOT

LINT = os.path.join(ROOT, "scripts", "lint_imports.py")

pytest.importorskip("importlinter")


def lint(root: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, LINT, root], capture_output=True, text=True, timeout=300, cwd=root)


def tree_copy(tmp_path, edits: dict) -> str:
    """The repository's packages (copies of the folders ``edits`` touches, links to the others) plus edits."""
    root = tmp_path / "repo"
    root.mkdir()
    shutil.copy(os.path.join(ROOT, "pyproject.toml"), root / "pyproject.toml")
    touched = {path.split("/")[0] for path in edits}
    for folder in ("nnconsole", "engine", "console_app", "project_templates"):
        if folder in touched:
            skipped = ["__pycache__", "results", ".nnconsole-cache"] + (["data"] if folder == "project_templates" else [])
            shutil.copytree(os.path.join(ROOT, folder), root / folder, ignore=shutil.ignore_patterns(*skipped))
        else:
            os.symlink(os.path.join(ROOT, folder), root / folder)
    for path, text in edits.items():
        (root / path).write_text(text)
    return str(root)


def test_the_tree_keeps_every_contract():
    result = lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "5 kept, 0 broken" in result.stdout


LAYERS = "The engine's packages are layers"
GUI_PACKAGES = "The GUI process imports no engine package that runs nnabla or MPI"
GUI_NNABLA = "The GUI imports nnabla and mpi4py neither itself nor through a module's top level"


@pytest.mark.parametrize("path, text, contract", [
    ("engine/qt_leak.py", "from PySide6 import QtCore\n", "The engine never imports Qt or the GUI"),
    ("engine/gui_leak.py", "from nnconsole.app.shell import main_window\n", "The engine never imports Qt or the GUI"),
    # an upward import, at the top or deferred into a function, anywhere in the stack
    ("engine/project/upward.py", "from nnconsole.engine.check.validate import validate\n", LAYERS),
    ("engine/data/upward.py", "def f():\n    from nnconsole.engine.train.trainer import Trainer\n", LAYERS),
    ("engine/rundir/upward.py", "import nnconsole.engine.plan.worker_plan\n", LAYERS),
    ("engine/test_seams.py", "from nnconsole.engine.project import model\n", LAYERS),  # the bottom row too
    # siblings of one layer are independent
    ("engine/plan/sideways.py", "from nnconsole.engine.data import labels\n", LAYERS),
    ("console_app/trainer_leak.py", "from nnconsole.engine.train.trainer import Trainer\n", GUI_PACKAGES),
    ("console_app/runtime_leak.py", "from nnconsole.engine.runtime import graph\n", GUI_PACKAGES),
    ("console_app/nnabla_leak.py", "import nnabla\n", GUI_NNABLA),
    ("console_app/mpi_leak.py", "from mpi4py import MPI\n", GUI_NNABLA),
    ("project_templates/engine_leak.py", "import nnconsole.engine.rundir.store\n",
     "The templates import nothing else of nnconsole"),
])
def test_each_contract_catches_its_violation(tmp_path, path, text, contract):
    result = lint(tree_copy(tmp_path, {path: text}))
    assert result.returncode != 0, result.stdout
    assert "1 broken" in result.stdout, result.stdout
    broken = " ".join(result.stdout.split("Broken contracts", 1)[1].split())  # the linter wraps long names
    assert contract in broken


def test_ruff_passes_with_the_configured_rules():
    ruff = shutil.which("ruff", path=os.path.dirname(sys.executable)) or shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed (pip install -e .[test])")
    result = subprocess.run([ruff, "check", "--no-cache", "."], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_bench_and_scripts_use_the_installed_package_not_sys_path():
    """The package is installed (editable) in .venv: no script puts the checkout on sys.path or PYTHONPATH."""
    offenders = []
    for folder in ("bench", "scripts"):
        for name in sorted(os.listdir(os.path.join(ROOT, folder))):
            if not name.endswith(".py") or name == "lint_imports.py":  # it maps the checkout for import-linter
                continue
            text = open(os.path.join(ROOT, folder, name), encoding="utf-8").read()
            if "sys.path.insert" in text or "PYTHONPATH=ROOT" in text or "NNCONSOLE_BENCH_ENGINE" in text:
                offenders.append(f"{folder}/{name}")
    assert offenders == []
