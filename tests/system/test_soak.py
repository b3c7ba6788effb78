"""Soak (opt-in: ``pytest -m soak tests/system/test_soak.py``): many short runs back to back leak nothing.

50 runs from the CLI (every fifth on two workers under mpiexec) and 10 from the GUI's
RunController: every run finishes, no process, temp file, STOP file or MPI session directory is
left behind (Open MPI's session folders and shared-memory segments included), and the GUI process
keeps the same open files and about the same memory.
"""
from __future__ import annotations

import os
import time

import pytest

from nnconsole.engine.rundir import store as runs
from tests.support.cli import nnconsole, run_dir_from
from tests.support.processes import live_processes
from tests.support.projects import tabular_project

pytestmark = pytest.mark.soak

CLI_RUNS = 50
GUI_RUNS = 10


def private_mpi_dirs(tmp_path) -> dict:
    """Environment that sends Open MPI's session directories and shared-memory segments to folders
    of this test, so that whatever a run leaves behind shows up there (and nothing of other jobs)."""
    tmp, shm = tmp_path / "tmpdir", tmp_path / "shm"
    tmp.mkdir()
    shm.mkdir()
    return {"TMPDIR": str(tmp), "OMPI_MCA_btl_sm_backing_directory": str(shm)}


def stray_files(run_dir: str) -> list:
    return [os.path.join(d, f) for d, _, files in os.walk(run_dir) for f in files
            if f == "STOP" or ".tmp" in f]


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def test_fifty_cli_runs_back_to_back(tmp_path):
    one = tabular_project(str(tmp_path / "one"), n=128, batch=16, epochs=2)
    two = tabular_project(str(tmp_path / "two"), n=128, batch=8, epochs=2, workers=2)
    env = private_mpi_dirs(tmp_path)
    durations = []
    for i in range(CLI_RUNS):
        project = two if i % 5 == 4 else one
        start = time.monotonic()
        run_dir = run_dir_from(nnconsole(["train", project, "-q"], timeout=120, env=env).stdout)
        durations.append(time.monotonic() - start)
        assert runs.read_status(run_dir).status == "finished"
        assert not live_processes(str(tmp_path)), live_processes(str(tmp_path))
        assert not stray_files(run_dir), stray_files(run_dir)
    assert len(runs.list_runs(os.path.join(str(tmp_path), "one", "results", "project"))) == CLI_RUNS * 4 // 5
    for folder in env.values():
        assert not os.listdir(folder), (folder, os.listdir(folder))
    # Later runs are not slower than early ones (nothing accumulates between runs).
    print(f"CLI soak: seconds per run {[round(d, 2) for d in durations]}")
    ones = [d for i, d in enumerate(durations) if i % 5 != 4]
    assert sum(ones[-5:]) / 5 < 1.5 * sum(ones[:5]) / 5 + 1.0, durations


def test_ten_gui_runs_leak_no_processes_files_or_memory(tmp_path, qtbot, monkeypatch):
    pytest.importorskip("PySide6")
    from nnconsole.app.bridge.run_controller import RunController

    project = tabular_project(str(tmp_path / "gui"), n=128, batch=16, epochs=2)
    env = private_mpi_dirs(tmp_path)
    for key, value in env.items():  # the controller passes its own environment to the engine
        monkeypatch.setenv(key, value)
    controller = RunController()
    received = []
    controller.records_received.connect(lambda run_dir, records: received.extend(records))
    fds, memory, children = [], [], []
    for i in range(GUI_RUNS):
        with qtbot.waitSignal(controller.run_finished, timeout=120_000) as finished:
            controller.start_training(project, workers=2 if i % 5 == 4 else 1)
        run_dir, status, code = finished.args
        assert (status, code) == ("finished", 0), controller.output
        assert not controller.is_running()
        qtbot.wait(200)  # let deleteLater() run
        assert not live_processes(str(tmp_path)), live_processes(str(tmp_path))
        assert not stray_files(run_dir)
        fds.append(open_fds())
        memory.append(rss_mb())
        children.append(len(controller.children()))
    print(f"GUI soak: open fds per run {fds}; RSS MB per run {[round(m, 1) for m in memory]}")
    assert any(r.get("type") == "validation" for r in received)
    assert fds[-1] <= fds[1], fds  # run 1 may open lazily-created files once (fonts, plugins)
    assert children[-1] == children[0], children  # every QProcess was deleted
    assert memory[-1] - memory[1] < 15.0, memory
    for folder in env.values():
        assert not os.listdir(folder), (folder, os.listdir(folder))
