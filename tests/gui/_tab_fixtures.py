"""Fixtures shared by the tab tests: the digits template copied to a temp folder, one trained run, waits.

The trained run is made once per session (``nnconsole train`` as a subprocess, 1 worker, 2 epochs)
and cached here, so every test module that imports the fixture reuses it; tests that change a run
copy it first (``copy_run``).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from typing import Callable, Optional

import pytest
from nnconsole.engine.check.project_file import load_valid_project

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIGITS = os.path.join(ROOT, "project_templates", "digits_cnn")
_cache: dict = {}


def copy_digits(dest: str, max_epoch: Optional[int] = None, workers: Optional[int] = None) -> str:
    """Copy the digits template to ``dest`` and return the project path.

    The project file and CSVs are copied; the 1,797 images are linked (a symlinked folder), which
    is much faster than copying them and reads the same. Never delete images through the link.
    """
    os.makedirs(os.path.join(dest, "data"))
    for name in ("project.yaml", "README.md"):
        shutil.copy2(os.path.join(DIGITS, name), os.path.join(dest, name))
    for name in ("train.csv", "validation.csv"):
        shutil.copy2(os.path.join(DIGITS, "data", name), os.path.join(dest, "data", name))
    os.symlink(os.path.join(DIGITS, "data", "images"), os.path.join(dest, "data", "images"))
    path = os.path.join(dest, "project.yaml")
    if max_epoch is not None or workers is not None:
        from nnconsole.engine.project.io import save_project

        project = load_valid_project(path, check_datasets=False)
        if max_epoch is not None:
            project.config.max_epoch = max_epoch
        if workers is not None:
            project.multi_gpu.workers = workers
        save_project(project, path, backup=False)
    return path


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``nnconsole`` as the GUI does (same interpreter, ``-m nnconsole``)."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return subprocess.run([sys.executable, "-m", "nnconsole.engine.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=ROOT)


def copy_run(run_dir: str, name: str) -> str:
    """A copy of a run directory next to it (same results root), for tests that alter a run."""
    dest = os.path.join(os.path.dirname(run_dir), name)
    shutil.copytree(run_dir, dest)
    return dest


def wait_until(qtbot, condition: Callable[[], bool], timeout: float = 30.0) -> None:
    """Process events until ``condition()`` holds (fails the test after ``timeout`` seconds)."""
    qtbot.waitUntil(condition, timeout=int(timeout * 1000))


@pytest.fixture
def digits_project(tmp_path) -> str:
    """A fresh copy of the digits template; returns project.yaml's path."""
    return copy_digits(str(tmp_path / "digits"))


@pytest.fixture
def digits_document(digits_project, qtbot):
    """A ProjectDocument with the copied digits project loaded."""
    from nnconsole.app.document.project_document import ProjectDocument

    document = ProjectDocument()
    document.load(digits_project)
    yield document
    try:  # the undo stack may announce cleanChanged while it is destroyed, after its document
        document.undo_stack.cleanChanged.disconnect()
    except (RuntimeError, TypeError):
        pass


@pytest.fixture(scope="session")
def trained_digits_run(tmp_path_factory) -> tuple:
    """(project path, run directory) of a finished 2-epoch digits run, trained once per session."""
    if "run" not in _cache:
        folder = tmp_path_factory.mktemp("trained") / "digits"
        project = copy_digits(str(folder), max_epoch=2)
        started = time.monotonic()
        done = cli("train", project, "--gpus", "1", "--quiet")
        assert done.returncode == 0, done.stderr
        from nnconsole.engine.rundir import store as runs

        found = runs.list_runs(runs.results_root(project))
        assert len(found) == 1, found
        _cache["run"] = (project, os.path.abspath(found[0]))
        _cache["seconds"] = time.monotonic() - started
    return _cache["run"]


def open_tab_page(qtbot, create_page: Callable, project_path: str):
    """A tab page (from its ``create_page``) on a document loaded from ``project_path``, shown at 1400x900."""
    from nnconsole.app.document.project_document import ProjectDocument

    document = ProjectDocument()
    document.load(project_path)
    page = create_page(document, None)
    qtbot.addWidget(page)
    page.resize(1400, 900)
    page.show()
    return page
