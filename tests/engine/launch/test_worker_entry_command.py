"""The command line every worker (and helper process) runs (issue 28 item 8): a small entry script by its path,
``python .../nnconsole/engine/start_module.py nnconsole.engine.train.worker RUN_DIR``, one readable line in
``ps`` and in logs/launcher.log, instead of a multi-line ``-c`` program; and still nothing imported from the
working folder, not even ``runpy`` (which ``python -m`` would import from there).
"""
from __future__ import annotations

import os
import subprocess
import sys

from nnconsole import engine
from nnconsole.engine.helper_processes import START_MODULE, python_module_command
from nnconsole.engine.launch.launcher import worker_command
from nnconsole.engine.launch.watch import _is_worker_of, launch_header
from nnconsole.engine.rundir.protocol import LAUNCH_HEADER

PLANTED = "import os\nopen(os.path.join({markers!r}, __name__), 'w').close()\n"
# What ``python -m`` and the old ``-c`` bootstrap would import from the working folder before anything else.
PLANTED_NAMES = ("runpy", "importlib", "types", "numpy", "json", "argparse", "nnconsole")


def plant(folder: str, markers: str) -> None:
    for name in PLANTED_NAMES:
        if name in ("importlib", "nnconsole"):  # packages
            os.makedirs(os.path.join(folder, name), exist_ok=True)
            target = os.path.join(folder, name, "__init__.py")
        else:
            target = os.path.join(folder, name + ".py")
        with open(target, "w") as fh:
            fh.write(PLANTED.format(markers=markers))


def test_the_worker_command_is_one_readable_line_naming_the_module_and_run(tmp_path):
    run_dir = str(tmp_path / "20240101_000000")
    cmd = worker_command(run_dir, 1)
    assert cmd == [sys.executable, START_MODULE, "nnconsole.engine.train.worker", run_dir]
    assert "-c" not in cmd and all("\n" not in a for a in cmd)
    header = launch_header(cmd)
    assert header.startswith(LAUNCH_HEADER) and header.count("\n") == 1  # launcher.log's first line, whole
    assert "except" not in header and "nnconsole.engine.train.worker " + run_dir in header
    assert START_MODULE == os.path.join(os.path.dirname(engine.__file__), "start_module.py")  # the installed one
    assert os.path.isfile(START_MODULE)


def test_the_entry_script_imports_nothing_from_the_working_folder(tmp_path):
    markers, folder = tmp_path / "markers", tmp_path / "work"
    markers.mkdir()
    folder.mkdir()
    plant(str(folder), str(markers))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(python_module_command("json.tool") + ["--help"], cwd=str(folder), capture_output=True,
                         text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert "usage" in out.stdout
    assert sorted(os.listdir(markers)) == []
    # the control: plain ``python -m`` from that folder runs the planted runpy (why the entry is a script)
    subprocess.run([sys.executable, "-m", "json.tool", "--help"], cwd=str(folder), capture_output=True, timeout=120,
                   env=env)
    assert "runpy" in os.listdir(markers)


def test_the_entry_script_passes_arguments_and_exit_codes_like_python_m(tmp_path):
    code = subprocess.run(python_module_command("json.tool") + [str(tmp_path / "missing.json")],
                          capture_output=True, text=True, timeout=120)
    assert code.returncode != 0 and "missing.json" in code.stderr
    usage = subprocess.run([sys.executable, START_MODULE], capture_output=True, text=True, timeout=60)
    assert usage.returncode != 0 and "usage" in usage.stderr


def test_a_worker_started_by_the_entry_script_is_found_as_the_runs_worker(tmp_path):
    run_dir = str(tmp_path / "20240101_000000")
    assert _is_worker_of([os.fsencode(a) for a in worker_command(run_dir, 1)], os.fsencode(run_dir))
    assert not _is_worker_of([os.fsencode(a) for a in worker_command(run_dir + "x", 1)], os.fsencode(run_dir))
