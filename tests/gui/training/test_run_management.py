"""TRAINING history's run menu (issue 19): rename/annotate, delete to a trash (never a run in use), hide and
prune failed or empty runs, resume with another worker count, re-edit, export, open in EVALUATION."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tests.gui.support import copy_digits, copy_run, fake_run, open_tab_page, wait_until


from nnconsole.app.training import dialogs, run_manage
from nnconsole.app.training.history import NAME_COLUMN
from nnconsole.app.training.page import TrainingPage, create_page
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.project.io import load_project
from nnconsole.engine.check.project_file import validate
from nnconsole.engine.rundir.notes import MAX_TITLE, read_note
from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.rundir.protocol import METRICS_FILE, RESOLVED_FILE, STATUS_FILE

pytestmark = pytest.mark.gui


def make_page(qtbot, project_path: str) -> TrainingPage:
    return open_tab_page(qtbot, create_page, project_path)


@pytest.fixture
def no_desktop_trash(monkeypatch):
    """Deleted runs go to the results root's .trash (the test machine's desktop trash is not touched)."""
    monkeypatch.setattr(run_manage, "desktop_trash", lambda path: False)


def sleeper() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])


def menu_actions(page: TrainingPage, run_dir: str) -> dict:
    menu = page.build_run_menu(run_dir)
    return {a.objectName()[len("run_menu_"):]: a for a in menu.actions() if a.objectName()}


# ---------------------------------------------------------------------------------------------- rename / note

@pytest.mark.slow
def test_rename_and_annotate_is_kept_in_the_runs_note_file_only(qtbot, tmp_path, monkeypatch):
    project = copy_digits(str(tmp_path / "digits"))
    run_dir = fake_run(project, "20240101_000000")
    status_before = open(os.path.join(run_dir, STATUS_FILE), "rb").read()
    page = make_page(qtbot, project)
    assert page.history.table.item(0, NAME_COLUMN).text() == "20240101_000000"
    asked = []
    monkeypatch.setattr(dialogs, "ask_run_note",
                        lambda parent, name, title, note: asked.append((name, title, note))
                        or ("  lr 0.01\n  wider  ", "tried a wider conv"))
    menu_actions(page, run_dir)["rename"].trigger()
    assert asked == [("20240101_000000", "", "")]
    assert page.history.table.item(0, NAME_COLUMN).text() == "lr 0.01 wider"  # one line
    assert "tried a wider conv" in page.history.table.item(0, 1).toolTip()
    assert open(os.path.join(run_dir, STATUS_FILE), "rb").read() == status_before  # engine files untouched
    assert json.load(open(os.path.join(run_dir, "note.json"))) == {"title": "lr 0.01 wider",
                                                                    "note": "tried a wider conv"}
    # asked again: the dialog starts from what was saved; clearing both removes the file
    monkeypatch.setattr(dialogs, "ask_run_note", lambda parent, name, title, note: asked.append((title, note))
                        or ("", ""))
    page.rename_run(run_dir)
    assert asked[-1] == ("lr 0.01 wider", "tried a wider conv")
    assert not os.path.exists(os.path.join(run_dir, "note.json"))
    assert page.history.table.item(0, NAME_COLUMN).text() == "20240101_000000"


def test_a_hostile_note_file_reads_as_no_note(tmp_path):
    run_dir = str(tmp_path)
    for content in (b"\xff\xfe not json", b"[1, 2]", json.dumps({"title": 5, "note": None}).encode(),
                    b'{"title": "' + b"x" * (2 << 20) + b'"}'):
        with open(os.path.join(run_dir, "note.json"), "wb") as fh:
            fh.write(content)
        assert (read_note(run_dir).title, read_note(run_dir).note) == ("", "")
    with open(os.path.join(run_dir, "note.json"), "w") as fh:
        json.dump({"title": "t" * 5000, "note": "n"}, fh)
    assert len(read_note(run_dir).title) == MAX_TITLE
    os.unlink(os.path.join(run_dir, "note.json"))
    os.mkfifo(os.path.join(run_dir, "note.json"))  # would block a plain open() forever
    assert read_note(run_dir).title == ""


# ---------------------------------------------------------------------------------------------- delete

def test_delete_asks_first_and_moves_the_run_to_a_trash(qtbot, tmp_path, monkeypatch, no_desktop_trash):
    project = copy_digits(str(tmp_path / "digits"))
    keep = fake_run(project, "20240101_000000")
    gone = fake_run(project, "20240102_000000")
    page = make_page(qtbot, project)
    monkeypatch.setattr(dialogs, "confirm_delete_runs", lambda parent, names: False)
    menu_actions(page, gone)["delete"].trigger()
    assert os.path.isdir(gone) and len(page.history.rows) == 2  # cancelled: nothing happens
    monkeypatch.setattr(dialogs, "confirm_delete_runs", lambda parent, names: names == ["20240102_000000"])
    page.history.select_run(gone)
    assert page.log_pane.run_dir == gone and page.curves.primary == gone
    assert page.delete_runs([gone]) == [gone]
    assert page.log_pane.run_dir is None and page.curves.primary != gone  # nothing of it stays on screen
    assert not os.path.exists(gone) and os.path.isdir(keep)
    trashed = os.path.join(runs.results_root(project), ".trash", "20240102_000000")
    assert os.path.isfile(os.path.join(trashed, METRICS_FILE))  # restorable, whole
    assert [r.run_dir for r in page.history.rows] == [keep]
    assert ".trash" in page.status.text()


def test_desktop_trash_is_used_where_there_is_one(qtbot, tmp_path, monkeypatch):
    project = copy_digits(str(tmp_path / "digits"))
    run_dir = fake_run(project, "20240101_000000")
    calls = []
    monkeypatch.setattr(run_manage, "desktop_trash", lambda path: calls.append(path) or os.rename(path, path + "x")
                        or True)
    assert run_manage.delete_run(run_dir) == "the trash"
    assert calls == [run_dir] and not os.path.exists(os.path.join(runs.results_root(project), ".trash"))


@pytest.mark.slow
def test_a_running_run_is_never_deleted(qtbot, tmp_path, monkeypatch, no_desktop_trash):
    project = copy_digits(str(tmp_path / "digits"))
    proc = sleeper()
    try:
        running = fake_run(project, "20240101_000000", status="running", pid=proc.pid)
        page = make_page(qtbot, project)
        assert not menu_actions(page, running)["delete"].isEnabled()
        told = []
        monkeypatch.setattr(dialogs, "confirm_delete_runs", lambda parent, names: True)
        monkeypatch.setattr(dialogs, "tell", lambda parent, title, text, warning=False: told.append(text))
        assert page.delete_runs([running]) == []
        assert os.path.isdir(running) and told and f"process {proc.pid}" in told[0]
        with pytest.raises(run_manage.RunInUse):
            run_manage.delete_run(running)
    finally:
        proc.kill()
        proc.wait()


def test_a_run_whose_writer_lock_is_held_is_never_deleted(tmp_path, no_desktop_trash):
    """A resume going on from a terminal: status.json may still say stopped, the lock tells."""
    project = copy_digits(str(tmp_path / "digits"))
    run_dir = fake_run(project, "20240101_000000", status="stopped")
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from nnconsole.engine.rundir.lock import RunLock; "
                               "RunLock(sys.argv[1]).acquire(); print('held', flush=True); time.sleep(60)", run_dir],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(run_manage.RunInUse, match="being trained"):
            run_manage.delete_run(run_dir)
        assert os.path.isdir(run_dir)
    finally:
        holder.kill()
        holder.wait()
    assert run_manage.delete_run(run_dir)  # the holder is gone: now it may go
    assert not os.path.exists(run_dir)


# ---------------------------------------------------------------------------------------------- hide / prune

@pytest.mark.slow
def test_failed_and_empty_runs_can_be_hidden_and_pruned(qtbot, tmp_path, monkeypatch, no_desktop_trash):
    project = copy_digits(str(tmp_path / "digits"))
    now = time.time()
    good = fake_run(project, "20240103_000000", started=now, iteration=46)
    failed = fake_run(project, "20240102_000000", status="failed", started=now - 10, iteration=12)
    empty = fake_run(project, "20240101_000000", status="stopped", started=now - 20, records=[])
    page = make_page(qtbot, project)
    assert len(page.history.rows) == 3
    page.history.hide_failed.setChecked(True)
    assert [r.run_dir for r in page.history.rows] == [good]
    assert "2 hidden" in page.history.title.text()
    page.history.hide_failed.setChecked(False)
    assert len(page.history.rows) == 3
    asked = []
    monkeypatch.setattr(dialogs, "confirm_delete_runs", lambda parent, names: asked.append(sorted(names)) or True)
    assert menu_actions(page, good)["prune"].isEnabled()
    assert sorted(page.prune_runs()) == sorted([failed, empty])
    assert asked == [["20240101_000000", "20240102_000000"]]
    assert [r.run_dir for r in page.history.rows] == [good]
    assert not menu_actions(page, good)["prune"].isEnabled()


# ---------------------------------------------------------------------------------------------- menu states

@pytest.mark.slow
def test_the_menu_offers_what_applies_to_the_run(qtbot, tmp_path, trained_digits_run):
    project = copy_digits(str(tmp_path / "digits"))
    finished = fake_run(project, "20240101_000000")
    stopped = fake_run(project, "20240102_000000", status="stopped")
    os.makedirs(runs.checkpoint_dir(stopped))
    open(os.path.join(runs.checkpoint_dir(stopped), "ckpt-20.json"), "w").close()
    page = make_page(qtbot, project)
    got = menu_actions(page, finished)
    assert set(got) >= {"rename", "resume", "reedit", "export", "evaluate", "compare", "folder", "delete", "prune"}
    assert not got["resume"].isEnabled() and not got["export"].isEnabled()  # finished; no trained parameters
    assert menu_actions(page, stopped)["resume"].isEnabled()
    got["compare"].trigger()
    assert page.history.checked_runs() == [finished]
    assert menu_actions(page, finished)["compare"].text().startswith("Remove")
    # a right click on a row selects it and asks for its menu
    with qtbot.waitSignal(page.history.menu_requested) as blocker:
        table = page.history.table
        table.customContextMenuRequested.emit(table.visualItemRect(table.item(1, 1)).center())
    assert blocker.args[0] == finished and page.history.selected_run() == finished
    assert page.run_menu.isVisible() and page.run_menu.actions()[0].objectName() == "run_menu_rename"
    page.run_menu.close()
    trained_project, run_dir = trained_digits_run
    trained_page = make_page(qtbot, trained_project)
    got = menu_actions(trained_page, run_dir)
    assert got["export"].isEnabled() and got["evaluate"].isEnabled() and got["reedit"].isEnabled()


# ---------------------------------------------------------------------------------------------- re-edit

@pytest.mark.slow
def test_reedit_makes_a_new_project_with_the_trained_weights(qtbot, tmp_path, trained_digits_run, monkeypatch):
    project, run_dir = trained_digits_run
    page = make_page(qtbot, project)
    suggested = run_manage.suggested_reedit_path(run_dir)
    assert os.path.dirname(suggested) == os.path.dirname(project) and not os.path.exists(suggested)
    target = str(tmp_path / "elsewhere" / "again.yaml")  # another folder: paths are rewritten for it

    class Files:
        opened: list = []

        def open_path(self, path):
            self.opened.append(path)
            return True

    class Window:
        files = Files()
        tabs: list = []

        def show_tab(self, key):
            self.tabs.append(key)

    page.window_ = Window()
    monkeypatch.setattr(dialogs, "choose_reedit_path", lambda parent, suggested: target)
    before = open(project, "rb").read()
    assert page.reedit_run(run_dir) == target
    assert Files.opened == [target] and Window.tabs == ["edit"]
    assert open(project, "rb").read() == before  # the open project is not touched
    made = load_valid_project(target, allow_outside_data=True)
    weights = os.path.normpath(os.path.join(os.path.dirname(target), made.config.initial_parameters))
    assert weights == os.path.join(run_dir, "parameters_best.h5")
    assert not os.path.isabs(made.datasets.training)
    assert os.path.normpath(os.path.join(os.path.dirname(target), made.datasets.training)) == os.path.join(
        os.path.dirname(project), "data", "train.csv")
    assert [p for p in validate(made, allow_outside_data=True) if p.severity == "error"] == []
    # never overwrites: the same destination again is refused with a message
    told = []
    monkeypatch.setattr(dialogs, "tell", lambda parent, title, text, warning=False: told.append(text))
    assert page.reedit_run(run_dir) is None and "exists already" in told[0]


# ---------------------------------------------------------------------------------------------- export / evaluate

@pytest.mark.slow
def test_export_runs_the_cli_and_reports_the_file(qtbot, tmp_path, trained_digits_run, monkeypatch):
    project, run_dir = trained_digits_run
    page = make_page(qtbot, project)
    target = str(tmp_path / "model.onnx")
    monkeypatch.setattr(dialogs, "choose_export", lambda parent, suggested: ("onnx", target))
    assert page.export_run(run_dir)
    assert not menu_actions(page, run_dir)["export"].isEnabled()  # one export at a time
    wait_until(qtbot, lambda: page._export_command is None, 120)
    assert "Exported" in page.status.text(), page.error.toPlainText()
    assert os.path.getsize(target) > 1000


@pytest.mark.slow
def test_open_in_evaluation_selects_the_run_there(qtbot, trained_digits_run):
    from nnconsole.app.evaluation.page import create_page as evaluation_page

    project, run_dir = trained_digits_run
    page = make_page(qtbot, project)
    evaluation = evaluation_page(page.document, None)
    qtbot.addWidget(evaluation)
    shown = []
    page.window_ = type("Window", (), {"pages": {"evaluation": evaluation},
                                       "show_tab": lambda self, key: shown.append(key)})()
    assert page.evaluate_run(run_dir)
    assert evaluation.selected_run() == run_dir and shown == ["evaluation"]


# ---------------------------------------------------------------------------------------------- resume

@pytest.mark.slow
def test_resume_a_stopped_run_with_another_worker_count(qtbot, tmp_path, trained_digits_run, monkeypatch):
    """A stopped run (a finished run's copy marked stopped at its last checkpoint) resumes with 2 workers
    in its own directory, followed live like any run."""
    _, source = trained_digits_run
    run_dir = copy_run(source, "20000101_000000")
    try:
        st = runs.read_status(run_dir)
        st.status = "stopped"
        runs.write_status(run_dir, st)
        with open(os.path.join(run_dir, "cli-output.log"), "w") as fh:
            fh.write("the first session's output\n")
        project = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(run_dir))), "project.yaml")
        page = make_page(qtbot, project)
        monkeypatch.setattr(dialogs, "ask_workers", lambda parent, name, workers: workers + 1)
        assert menu_actions(page, run_dir)["resume"].isEnabled()
        with qtbot.waitSignal(page.controller.run_finished, timeout=120_000) as blocker:
            menu_actions(page, run_dir)["resume"].trigger()
        assert blocker.args[0] == run_dir and blocker.args[1] == "finished", page.error.toPlainText()
        assert runs.read_status(run_dir).workers == 2
        assert len(runs.list_runs(os.path.dirname(run_dir))) == 2  # no new run directory
        kept = [n for n in os.listdir(run_dir) if n.startswith("cli-output.") and n != "cli-output.log"]
        assert len(kept) == 1 and open(os.path.join(run_dir, kept[0])).read() == "the first session's output\n"
        assert "run directory" in open(os.path.join(run_dir, "cli-output.log")).read()  # the resume's own
    finally:
        import shutil

        shutil.rmtree(run_dir, ignore_errors=True)


def test_reedit_rebases_every_file_the_project_names(tmp_path):
    """Datasets, initial parameters and the hostfile point at the same files from the new project's folder."""
    import yaml

    project = copy_digits(str(tmp_path / "digits"))
    run_dir = fake_run(project, "20240101_000000", status="stopped")
    data = yaml.safe_load(open(project))
    data["datasets"]["training"] = os.path.join(os.path.dirname(project), "data", "train.csv")  # as the launcher
    data["multi_gpu"]["hostfile"] = "hosts.txt"  # relative to the run's project.yaml
    yaml.safe_dump(data, open(os.path.join(run_dir, RESOLVED_FILE), "w"), sort_keys=False)
    os.makedirs(runs.checkpoint_dir(run_dir))
    open(os.path.join(runs.checkpoint_dir(run_dir), "ckpt-20.json"), "w").close()
    open(os.path.join(runs.checkpoint_dir(run_dir), "ckpt-20.h5"), "w").close()  # no parameters_*.h5: the checkpoint's
    target = str(tmp_path / "other" / "p.yaml")
    made = load_project(run_manage.reedit_project(run_dir, target))
    where = os.path.dirname(target)
    assert os.path.normpath(os.path.join(where, made.multi_gpu.hostfile)) == os.path.join(run_dir, "hosts.txt")
    assert os.path.normpath(os.path.join(where, made.datasets.training)) == data["datasets"]["training"]
    assert os.path.normpath(os.path.join(where, made.config.initial_parameters)) == os.path.join(
        runs.checkpoint_dir(run_dir), "ckpt-20.h5")
    with pytest.raises(FileExistsError):
        run_manage.reedit_project(run_dir, target)
