"""The test tree's rules (tests/__init__.py): test modules import shared code from tests/support and never
another test module; tests/engine/ has one folder per engine package; no test file sits at tests/'s top;
every test folder outside tests/gui is a package, so two folders may hold test files of the same name."""
from __future__ import annotations

import ast
import os
from typing import List

import pytest

from tests.support.paths import ROOT, TESTS

PACKAGED = ("engine", "system", "repo", "templates", "support")  # tests/gui is laid out by its own rules


def all_test_modules() -> List[str]:
    """Every test module under tests/, as a path relative to the checkout."""
    found = []
    for here, dirs, files in os.walk(TESTS):
        dirs[:] = sorted(d for d in dirs if d not in ("data", "__pycache__"))
        found += [os.path.relpath(os.path.join(here, f), ROOT) for f in sorted(files)
                  if f.startswith("test_") and f.endswith(".py")]
    return found


def _is_test_module(dotted: str) -> bool:
    return any(part.startswith("test_") for part in dotted.split("."))


def imports_of_test_modules(source: str) -> List[str]:
    """The imports in ``source`` that name a test module (``tests.engine.data.test_loading``, ``test_plan``,
    ``from tests.engine.data import test_loading``, ``from .test_x import y``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if _is_test_module(a.name) and not a.name.startswith("nnconsole.")]
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            if module.startswith("nnconsole."):  # nnconsole.engine.test_seams is the engine's, not a test module
                continue
            if _is_test_module(module):
                found.append(module)
            elif module.startswith(("tests", ".")) or not module:
                found += [f"{module}.{a.name}" for a in node.names if a.name.startswith("test_")]
    return found


@pytest.mark.parametrize("source, offending", [
    ("from tests.engine.data.test_loading import grey\n", True),
    ("def f():\n    from tests.system.test_multiworker import PAUSE_AT\n", True),
    ("import test_plan\n", True),
    ("from tests.engine.plan import test_worker_plan\n", True),
    ("from .test_units import unit_project\n", True),
    ("from tests.support.projects import tabular_project\n", False),
    ("from nnconsole.engine.test_seams import seam_environment\nimport nnconsole.engine.test_seams\n", False),
])
def test_the_check_tells_test_module_imports_from_others(source, offending):
    assert bool(imports_of_test_modules(source)) == offending, imports_of_test_modules(source)


def test_no_test_module_imports_another():
    offenders = []
    for path in all_test_modules():
        with open(os.path.join(ROOT, path), encoding="utf-8") as fh:
            offenders += [f"{path}: {name}" for name in imports_of_test_modules(fh.read())]
    assert len(all_test_modules()) > 100
    assert offenders == [], "move what is shared into tests/support/"


def test_engine_tests_have_one_folder_per_engine_package():
    folders = sorted(d for d in os.listdir(os.path.join(TESTS, "engine"))
                     if os.path.isdir(os.path.join(TESTS, "engine", d)) and d != "__pycache__")
    assert len(folders) > 10
    strays = [d for d in folders if not os.path.isfile(os.path.join(ROOT, "engine", d, "__init__.py"))]
    assert strays == [], "tests/engine/<folder> names an engine package"


def test_no_test_file_at_the_top_of_tests():
    assert [p for p in all_test_modules() if os.path.dirname(p) == "tests"] == []


def test_test_folders_are_packages():
    missing = [os.path.relpath(here, ROOT)
               for top in PACKAGED for here, dirs, files in os.walk(os.path.join(TESTS, top))
               if "__pycache__" not in here and any(f.endswith(".py") for f in files)
               and "__init__.py" not in files]
    assert missing == []
