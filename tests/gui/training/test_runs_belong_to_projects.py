"""A run belongs to its project (issue 13, items 13 and 17), with real ``nnconsole train`` runs:

- opening another project during a run shows that project's state (no curves, progress or Stop of
  the other's run); the run goes on, a status-bar line says so, Stop does not reach it, and opening
  its project again shows it live, where Stop stops it;
- closing the window during a run asks: Cancel keeps everything, "Stop and quit" stops the run with a
  checkpoint, "Leave it running and quit" leaves a detached process (own session, output in files)
  that the next window attaches to, follows and stops.
"""
from __future__ import annotations

import contextlib
import os
import time

import pytest

from tests.gui.support import ROOT, copy_digits, fake_run, train_records, wait_until

from nnconsole.app.training import dialogs as training_dialogs
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.protocol import LAUNCHER, WORKER

pytestmark = pytest.mark.gui
RUN_TIMEOUT_MS = 120_000


@pytest.fixture
def long_projects(tmp_path):
    """(A, B): two digits projects; A trains for 500 epochs (minutes), so it runs until stopped."""
    return copy_digits(str(tmp_path / "a"), max_epoch=500), copy_digits(str(tmp_path / "b"), max_epoch=2)


def process_gone(pid: int) -> bool:
    """The process ended (a zombie not reaped yet counts: this test process may be its parent)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@contextlib.contextmanager
def stand_in_launcher():
    """A process that looks like ``nnconsole train`` (for runs written by hand); its PID."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "nnconsole.engine.cli.main", "train"])
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def training_window(make_window, path):
    window = make_window(tab_keys=("training",))
    window.resize(1400, 900)
    window.show()
    assert window.files.open_path(path, ask_save=False)
    window.show_tab("training")
    return window, window.pages["training"]


def start_and_wait_for_curves(qtbot, page) -> str:
    with qtbot.waitSignal(page.controller.run_started, timeout=60_000) as started:
        assert page.start_run()
    wait_until(qtbot, lambda: page.curves.point_count("train_loss") >= 2, 60)
    return started.args[0]


def stop_and_finish(qtbot, page) -> tuple:
    controller = page.controller
    with qtbot.waitSignal(controller.run_finished, timeout=RUN_TIMEOUT_MS) as blocker:
        page.stop_button.click()
    return tuple(blocker.args)


@pytest.mark.slow
def test_another_project_opened_during_a_run_shows_its_own_state(qtbot, make_window, long_projects, tmp_path):
    a, b = long_projects
    window, page = training_window(make_window, a)
    run_dir = start_and_wait_for_curves(qtbot, page)
    controller_a = page.controller
    launcher = runs.read_status(run_dir).pid

    assert window.files.open_path(b, ask_save=False)
    window.grab().save(str(tmp_path / "b_during_a_run.png"))
    assert window.windowTitle().startswith("b/project.yaml")
    assert page.history.rows == [] and page.live_run is None
    assert page.curves.primary is None and page.curves.runs == {}
    assert page.curves.plots["loss"].viewRange()[0][1] < 2  # not A's 500-epoch axis
    assert page.progress.bar.value() == 0 and page.status.text() == "No run yet."
    assert page.run_button.isEnabled() and not page.stop_button.isEnabled()
    # A's run goes on, tailed in the background, and only the status bar says so
    assert controller_a.is_running() and runs.pid_alive(launcher) and page.controller is not controller_a
    count = len(controller_a.records_so_far())
    wait_until(qtbot, lambda: len(controller_a.records_so_far()) > count, 30)
    assert page.curves.runs == {}
    indicator = page.projects.indicator
    wait_until(qtbot, lambda: "a/project.yaml" in indicator.text(), 10)
    assert indicator.isVisible() and window.statusBar().isAncestorOf(indicator)
    page.stop_run()  # B has no run: A's must not be stopped
    qtbot.wait(1500)
    assert not controller_a.stop_requested and runs.read_status(run_dir).status == "running"

    assert window.files.open_path(a, ask_save=False)  # A again: its run shows live
    window.grab().save(str(tmp_path / "a_again.png"))
    assert page.controller is controller_a and page.live_run == run_dir
    assert page.curves.primary == run_dir and page.curves.point_count("train_loss") >= 2
    assert page.progress.bar.value() > 0 and "iteration" in page.progress.bar.format()
    assert page.stop_button.isEnabled() and not page.run_button.isEnabled()
    assert "Training" in page.status.text() and not indicator.isVisible()
    count = page.curves.point_count("train_loss")
    wait_until(qtbot, lambda: page.curves.point_count("train_loss") > count, 30)  # live again
    finished = stop_and_finish(qtbot, page)
    assert finished[:2] == (run_dir, "stopped")
    assert runs.read_status(run_dir).status == "stopped"


@pytest.mark.slow
def test_closing_during_a_run_asks_cancel_keeps_it_and_stop_stops_it(qtbot, make_window, long_projects,
                                                                    monkeypatch):
    a, _ = long_projects
    window, page = training_window(make_window, a)
    run_dir = start_and_wait_for_curves(qtbot, page)
    asked = []

    def answer(choice):
        def ask(parent, projects):
            asked.append(list(projects))
            return choice
        return ask

    monkeypatch.setattr(training_dialogs, "ask_quit_during_run", answer(training_dialogs.CANCEL_QUIT))
    window.actions_by_name["quit"].trigger()  # Ctrl+Q
    assert asked == [["a/project.yaml"]]
    assert window.isVisible() and page.controller.is_running() and not page.controller.stop_requested

    launcher = runs.read_status(run_dir).pid
    monkeypatch.setattr(training_dialogs, "ask_quit_during_run", answer(training_dialogs.STOP_RUNS))
    started = time.monotonic()
    assert window.close()
    assert len(asked) == 2 and not window.isVisible()
    # the close waited for the graceful stop: the run recorded it, with a checkpoint, and its process is gone
    st = runs.read_status(run_dir)
    assert st.status == "stopped" and st.resumable and runs.list_checkpoints(run_dir)
    assert process_gone(launcher) and time.monotonic() - started < 20


@pytest.mark.slow
def test_leaving_a_run_running_detaches_it_and_the_next_window_follows_and_stops_it(qtbot, make_window,
                                                                                    long_projects, monkeypatch):
    a, _ = long_projects
    window, page = training_window(make_window, a)
    run_dir = start_and_wait_for_curves(qtbot, page)
    launcher = runs.read_status(run_dir).pid  # the nnconsole train process
    # detached: its own session (the GUI's terminal and exit do not reach it), output into files, not pipes
    assert os.getsid(launcher) == launcher != os.getsid(0)
    for fd in (1, 2):
        target = os.readlink(f"/proc/{launcher}/fd/{fd}")
        assert not target.startswith("pipe:"), target
    monkeypatch.setattr(training_dialogs, "ask_quit_during_run",
                        lambda parent, projects: training_dialogs.LEAVE_RUNNING)
    assert window.close()
    qtbot.wait(500)
    assert runs.pid_alive(launcher) and runs.read_status(run_dir).status == "running"
    seen = len(list(runs.iter_metrics(run_dir, "train")))
    deadline = time.monotonic() + 30
    while len(list(runs.iter_metrics(run_dir, "train"))) <= seen and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(list(runs.iter_metrics(run_dir, "train"))) > seen  # it trains on without any window

    monkeypatch.setattr(training_dialogs, "ask_quit_during_run",
                        lambda parent, projects: pytest.fail("no run should be going at the end"))
    again, page = training_window(make_window, a)  # "the next start": it attaches to the run
    assert page.controller.is_attached() and page.live_run == run_dir
    assert "Following" in page.status.text() and page.stop_button.isEnabled()
    assert page.curves.point_count("train_loss") >= 2
    count = page.curves.point_count("train_loss")
    wait_until(qtbot, lambda: page.curves.point_count("train_loss") > count, 30)
    _, status, _ = stop_and_finish(qtbot, page)
    assert status == "stopped"
    deadline = time.monotonic() + 30
    while not process_gone(launcher) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert process_gone(launcher)
    assert runs.read_status(run_dir).status == "stopped" and runs.list_checkpoints(run_dir)
    # the CLI's output went to files that moved into the run directory: its last words are there too
    with open(os.path.join(run_dir, "cli-output.log")) as fh:
        output = fh.read()
    assert output.startswith(f"run directory: {run_dir}") and "stopped with a checkpoint" in output
    assert not [n for n in os.listdir(os.path.dirname(run_dir)) if n.startswith(".starting-")]


GUI_THAT_STARTS_A_RUN = """
import os, sys
os.environ["QT_QPA_PLATFORM"] = "offscreen"
from PySide6.QtWidgets import QApplication
app = QApplication([])
from nnconsole.app.document.project_document import ProjectDocument
from nnconsole.app.training.page import TrainingPage
document = ProjectDocument()
document.load(sys.argv[1])
page = TrainingPage(document, None)
page.controller.run_started.connect(lambda run_dir: print("RUN", run_dir, flush=True))
page.start_run()
app.exec()
"""


@pytest.mark.slow
def test_a_run_outlives_a_killed_gui_and_the_next_one_follows_and_stops_it(qtbot, make_window, long_projects):
    import signal
    import subprocess
    import sys

    a, _ = long_projects
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               QT_QPA_PLATFORM="offscreen")
    gui = subprocess.Popen([sys.executable, "-c", GUI_THAT_STARTS_A_RUN, a], stdout=subprocess.PIPE, text=True,
                           env=env, cwd=ROOT)
    launcher = None
    try:
        line = gui.stdout.readline()
        assert line.startswith("RUN "), line
        run_dir = line[4:].strip()
        deadline = time.monotonic() + 60
        while not list(runs.iter_metrics(run_dir, "train")) and time.monotonic() < deadline:
            time.sleep(0.2)
        launcher = runs.read_status(run_dir).pid
        gui.send_signal(signal.SIGKILL)  # the GUI dies without a word
        gui.wait(10)
        seen = len(list(runs.iter_metrics(run_dir, "train")))
        deadline = time.monotonic() + 30
        while len(list(runs.iter_metrics(run_dir, "train"))) <= seen and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(list(runs.iter_metrics(run_dir, "train"))) > seen and runs.pid_alive(launcher)

        window, page = training_window(make_window, a)  # the next start follows it
        assert page.controller.is_attached() and page.live_run == run_dir and page.stop_button.isEnabled()
        count = page.curves.point_count("train_loss")
        wait_until(qtbot, lambda: page.curves.point_count("train_loss") > count, 30)
        _, status, code = stop_and_finish(qtbot, page)
        assert (status, code) == ("stopped", 3)
        assert runs.read_status(run_dir).status == "stopped" and runs.list_checkpoints(run_dir)
        deadline = time.monotonic() + 30
        while not process_gone(launcher) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert process_gone(launcher)
    finally:
        if gui.poll() is None:
            gui.kill()
            gui.wait()
        if launcher and not process_gone(launcher):
            os.kill(launcher, signal.SIGTERM)


@pytest.mark.slow
def test_a_background_run_that_ends_is_reported_under_its_own_project(qtbot, make_window, tmp_path):
    a = copy_digits(str(tmp_path / "a"))
    b = copy_digits(str(tmp_path / "b"))
    with stand_in_launcher() as pid:  # a run of A going in another process, followed when A is opened
        run_dir = fake_run(a, "20260101_000000", status="running", records=train_records(1), pid=pid)
        window, page = training_window(make_window, a)
        assert page.controller.is_attached() and page.live_run == run_dir
        assert window.files.open_path(b, ask_save=False)
        wait_until(qtbot, lambda: "a/project.yaml" in page.projects.indicator.text(), 10)
        runs.update_status(run_dir, WORKER, iteration=23)
        runs.update_status(run_dir, LAUNCHER, status="stopped")
        wait_until(qtbot, lambda: "ended: stopped" in window.statusBar().currentMessage(), 10)
        assert "a/project.yaml" in window.statusBar().currentMessage()
        assert not page.projects.indicator.isVisible() and page.status.text() == "No run yet."


def test_a_pid_reused_by_another_program_is_never_followed_or_stopped(qtbot, make_window, tmp_path):
    """status.json says running with a PID that is alive, but it is not an nnconsole process (the launcher
    died long ago and the PID was reused): the tab must not follow it, and Stop must not signal it."""
    import subprocess
    import sys

    a = copy_digits(str(tmp_path / "a"))
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        run_dir = fake_run(a, "20260101_000000", status="running", records=train_records(1), pid=other.pid)
        window, page = training_window(make_window, a)
        assert not page.controller.is_running() and page.live_run is None
        assert not page.stop_button.isEnabled() and "Following" not in page.status.text()
        page.stop_run()
        assert other.poll() is None  # not signalled
        assert page.history.rows[0].run_dir == run_dir
    finally:
        other.kill()
        other.wait()
