"""Launch and process security (issue 13 items 1, 3, 4): no code from project or run folders, host
names that are host names, and oversubscription only with the user's consent on the command line.

Every command here runs as a user (or the GUI) runs it: the real CLI in a subprocess, started from
the folder the GUI starts it from, with hostile modules planted where an attacker could put them.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from engine.runtime_paths import cli_command, python_module_command
from tests.helpers import ROOT, run_dir_from, tabular_project

# A module that, when imported, leaves a marker naming itself, the process and where it was found.
PLANTED = """import os
_markers = {markers!r}
open(os.path.join(_markers, __name__ + "-" + str(os.getpid()) + "-" + os.path.basename(os.path.dirname(__file__))),
     "w").close()
"""
PLANTED_NAMES = ("numpy", "argparse", "yaml", "json")


def plant(folder: str, markers: str) -> None:
    """Put modules the engine imports (numpy, argparse, yaml, json) into ``folder``."""
    os.makedirs(folder, exist_ok=True)
    for name in PLANTED_NAMES:
        with open(os.path.join(folder, name + ".py"), "w") as fh:
            fh.write(PLANTED.format(markers=markers))


def engine_env() -> dict:
    """The environment a user's shell gives: no PYTHONPATH (the venv's editable install finds the engine)."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    return env


def run_engine(args, cwd: str, timeout: float = 240) -> subprocess.CompletedProcess:
    """``nnconsole ARGS`` exactly as the GUI starts it (console_app.run_controller.engine_program)."""
    from console_app.run_controller import engine_program

    program, lead = engine_program()
    return subprocess.run([program, *lead, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=engine_env())


@pytest.fixture
def trap(tmp_path):
    """(project path, markers folder): a project whose folder, results folder and run folder are mined."""
    markers = str(tmp_path / "markers")
    os.makedirs(markers)
    project = tabular_project(str(tmp_path / "proj"), n=32, batch=8, epochs=1)
    folder = os.path.dirname(project)
    plant(folder, markers)
    plant(os.path.join(folder, "results"), markers)
    plant(os.path.join(folder, "results", "project"), markers)  # the workers' working folder
    return project, markers


def fired(markers: str) -> list:
    return sorted(os.listdir(markers))


# ---- item 1: no module is imported from a project or run folder ---------------------------------------
def test_engine_argvs_do_not_put_the_working_folder_on_sys_path(tmp_path):
    markers = str(tmp_path / "markers")
    os.makedirs(markers)
    plant(str(tmp_path), markers)
    for argv in (python_module_command("json.tool") + ["--help"], cli_command() + ["--help"]):
        out = subprocess.run(argv, cwd=str(tmp_path), capture_output=True, text=True, timeout=120, env=engine_env())
        assert out.returncode == 0, out.stderr
    assert fired(markers) == []


def test_validate_from_the_project_folder_imports_nothing_from_it(trap):
    project, markers = trap
    out = run_engine(["validate", project], cwd=os.path.dirname(project))
    assert out.returncode == 0, out.stderr
    assert fired(markers) == []


def test_train_and_evaluate_one_worker_import_nothing_from_project_or_run_folders(trap):
    project, markers = trap
    out = run_engine(["train", project, "-q"], cwd=os.path.dirname(project))
    assert out.returncode == 0, out.stdout + out.stderr
    run_dir = run_dir_from(out.stdout)
    assert fired(markers) == []
    plant(run_dir, markers)  # the GUI runs evaluate with the run folder as its working folder
    out = run_engine(["evaluate", run_dir], cwd=run_dir)
    assert out.returncode == 0, out.stdout + out.stderr
    assert fired(markers) == []


@pytest.mark.mpi
def test_train_two_workers_import_nothing_from_project_or_run_folders(trap):
    project, markers = trap
    out = run_engine(["train", project, "-q", "--gpus", "2"], cwd=os.path.dirname(project))
    assert out.returncode == 0, out.stdout + out.stderr
    assert fired(markers) == []


def test_frozen_app_drops_the_working_folder_from_sys_path(tmp_path, monkeypatch):
    sys.path.insert(0, os.path.join(ROOT, "packaging"))
    try:
        import nnconsole_app
    finally:
        sys.path.pop(0)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", ["", ".", str(tmp_path), "/opt/app/base_library.zip", "/opt/app"])
    nnconsole_app.drop_working_folder_from_path()
    assert sys.path == ["/opt/app/base_library.zip", "/opt/app"]
