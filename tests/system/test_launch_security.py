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

from nnconsole.engine.helper_processes import cli_command, python_module_command
from tests.support.cli import run_dir_from
from tests.support.paths import ROOT
from tests.support.projects import tabular_project

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
    """``nnconsole ARGS`` exactly as the GUI starts it (nnconsole.app.bridge.engine_process.engine_program)."""
    from nnconsole.app.bridge.engine_process import engine_program

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


def test_engine_argvs_start_from_a_deleted_working_folder(tmp_path):
    """A working folder removed under the command (a deleted run folder) must not crash the bootstrap."""
    gone = tmp_path / "gone"
    gone.mkdir()
    script = "import os, subprocess, sys; os.chdir(sys.argv[1]); os.rmdir(sys.argv[1]); " \
             "sys.exit(subprocess.run(sys.argv[2:]).returncode)"
    out = subprocess.run([sys.executable, "-c", script, str(gone)] + cli_command() + ["--help"],
                         capture_output=True, text=True, timeout=120, env=engine_env())
    assert out.returncode == 0, out.stderr
    assert "usage: nnconsole" in out.stdout


def test_validate_from_the_project_folder_imports_nothing_from_it(trap):
    project, markers = trap
    out = run_engine(["validate", project], cwd=os.path.dirname(project))
    assert out.returncode == 0, out.stderr
    assert fired(markers) == []


@pytest.mark.slow
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


# ---- item 3: hosts are host names -------------------------------------------------------------------------
def with_multi_gpu(project: str, **values) -> str:
    """Rewrite ``project`` with ``multi_gpu`` values set (written as text: loading would refuse them)."""
    import yaml

    with open(project) as fh:
        data = yaml.safe_load(fh)
    data.setdefault("multi_gpu", {}).update(values)
    with open(project, "w") as fh:
        yaml.safe_dump(data, fh)
    return project


def cli(args, cwd: str = ROOT, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nnconsole.engine.cli.main", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ, PYTHONPATH=ROOT))


def test_option_shaped_hosts_in_a_project_are_refused_with_their_place(tmp_path):
    mark = tmp_path / "ran"
    project = with_multi_gpu(tabular_project(str(tmp_path / "p"), n=32, batch=8, epochs=1),
                             workers=2, hosts=["node1:1", f"-oProxyCommand=touch {mark}"])
    for command in ("validate", "train"):
        out = cli([command, project])
        assert out.returncode == 2, out.stdout + out.stderr
        assert "multi_gpu.hosts[1]" in out.stderr and "is not a host name" in out.stderr, out.stderr
        assert "Traceback" not in out.stderr
    assert not mark.exists()
    assert not (tmp_path / "p" / "results").exists()


@pytest.mark.slow
def test_option_shaped_hosts_on_the_command_line_are_refused(tmp_path):
    project = tabular_project(str(tmp_path / "p"), n=32, batch=8, epochs=1)
    for args in (["train", project, "--gpus", "2", "--hosts=-oProxyCommand=x,node2"],
                 ["doctor", "--hosts=node1,-oProxyCommand=x"]):
        out = cli(args)
        assert out.returncode == 2 and "'-oProxyCommand=x' is not a host name" in out.stderr, out.stderr
    hostfile = tmp_path / "hosts.txt"
    hostfile.write_text("node1 slots=2\n-oProxyCommand=x slots=1\n")
    out = cli(["train", project, "--gpus", "2", "--hostfile", str(hostfile)])
    assert out.returncode == 2 and f"{hostfile}:2: '-oProxyCommand=x' is not a host name" in out.stderr, out.stderr
    # The same hostfile named by the project (relative to its folder) is refused before anything starts.
    os.replace(hostfile, tmp_path / "p" / "hosts.txt")
    with_multi_gpu(project, workers=2, hostfile="hosts.txt")
    out = cli(["train", project])
    assert out.returncode == 2 and "hosts.txt:2: '-oProxyCommand=x' is not a host name" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr and not (tmp_path / "p" / "results").exists()


def test_host_names_and_addresses_are_accepted():
    from nnconsole.engine.plan.hosts import host_problem, hostfile_problems

    for good in ("node1", "node1:4", "gpu-01.cluster.example.org", "10.0.0.2:8", "fe80::1", "[fe80::1]:2",
                 "localhost"):
        assert host_problem(good) is None, good
    for bad in ("-oProxyCommand=x", "--mca", "node1:0", "node1:-1", "a b", "a..b", "node1\n", "$(id)", "",
                "[10.0.0.1]:2", "n\u00f6de"):
        assert host_problem(bad), bad
    assert hostfile_problems("# rack 1\nnode1 slots=4 max_slots=8\n\nnode2\n") == []
    assert [n for n, _ in hostfile_problems("node1\nnode2 slots=2 -oX=y\n")] == [2]


# ---- item 4: more workers than cores only with the user's consent ----------------------------------------
def test_oversubscription_needs_consent_on_the_command_line(monkeypatch):
    from nnconsole.engine.launch.launcher import LaunchError, worker_command

    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    with pytest.raises(LaunchError, match=r"4 workers.*2 cores.*--oversubscribe"):
        worker_command("/tmp/run", 4)
    assert "--oversubscribe" in worker_command("/tmp/run", 4, oversubscribe=True)
    assert "--oversubscribe" not in worker_command("/tmp/run", 2)
    assert "--oversubscribe" not in worker_command("/tmp/run", 4, hosts=["a:2", "b:2"])  # the hosts' slots decide


def test_a_project_asking_for_65536_workers_is_refused_before_anything_starts(tmp_path):
    import time

    project = with_multi_gpu(tabular_project(str(tmp_path / "p"), n=32, batch=8, epochs=1), workers=65536)
    began = time.monotonic()
    out = cli(["train", project])
    assert out.returncode == 2, out.stdout + out.stderr
    assert time.monotonic() - began < 60
    cores = os.cpu_count()
    assert "65536 workers" in out.stderr and f"{cores} cores" in out.stderr and "--oversubscribe" in out.stderr
    assert "Traceback" not in out.stderr and not (tmp_path / "p" / "results").exists()


@pytest.mark.mpi
def test_oversubscription_with_consent_trains(tmp_path):
    project = tabular_project(str(tmp_path / "p"), n=48, batch=4, epochs=1)
    workers = str((os.cpu_count() or 1) + 1)
    out = cli(["train", project, "--gpus", workers, "-q"], timeout=300)
    assert out.returncode == 2 and "--oversubscribe" in out.stderr, out.stdout + out.stderr
    out = cli(["train", project, "--gpus", workers, "--oversubscribe", "-q"], timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
