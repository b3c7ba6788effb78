"""TRAINING tab: real runs launched through the CLI, Stop with a checkpoint, failures shown, live curves,
history with overlays and re-attachment, replay, and curves that stay smooth with 100,000 points."""
from __future__ import annotations

import csv
import os
import subprocess
import sys
import time

import pytest

from tests.gui.support import copy_digits, copy_run, open_tab_page, wait_until

from PySide6.QtCore import QPointF

from nnconsole.app.document.project_document import ProjectDocument
from nnconsole.app.training import dialogs
from nnconsole.app.training.curves import LearningCurves
from nnconsole.app.training.page import TrainingPage, create_page
from nnconsole.app.training.tradeoff import pareto_front
from nnconsole.engine.rundir import store as runs

pytestmark = pytest.mark.gui
RUN_TIMEOUT_MS = 120_000


def make_page(qtbot, project_path: str) -> TrainingPage:
    return open_tab_page(qtbot, create_page, project_path)


def finish(qtbot, page: TrainingPage):
    """Wait for the page's run to end; returns (run_dir, status, exit code)."""
    with qtbot.waitSignal(page.controller.run_finished, timeout=RUN_TIMEOUT_MS) as blocker:
        pass
    return tuple(blocker.args)


# ---------------------------------------------------------------------------------------------- real runs

@pytest.mark.slow
def test_run_two_workers_from_the_tab_draws_curves_and_lands_in_history(qtbot, tmp_path):
    project = copy_digits(str(tmp_path / "digits"), max_epoch=3)
    page = make_page(qtbot, project)
    assert page.history.rows == []
    page.workers.setValue(2)
    received = []  # (records in the batch, whether the run was still going when they arrived)
    page.controller.records_received.connect(lambda d, r: received.append((len(r), page.controller.is_running())))
    with qtbot.waitSignal(page.controller.run_started, timeout=60_000):
        assert page.start_run()
    assert not page.run_button.isEnabled() and page.stop_button.isEnabled()
    run_dir, status, code = finish(qtbot, page)
    assert (status, code) == ("finished", 0)
    assert any(n and running for n, running in received), received  # tailed as it ran, not only at the end
    # 1,437 samples / (32 x 2) = 23 iterations per epoch; a record every 10 iterations and at each epoch end
    assert page.curves.point_count("train_loss") == 3 * 3
    assert page.curves.point_count("valid_error") == 3
    x, y = page.curves.curve("valid_error").getData()
    assert list(x) == [1.0, 2.0, 3.0] and all(0.0 <= v <= 1.0 for v in y)
    assert page.curves.curve("lr").getData()[1][0] == pytest.approx(0.002)  # Adam alpha x 2 workers
    assert page.progress.bar.value() == 1000
    assert "finished" in page.status.text()
    row = page.history.rows[0]
    assert (row.run_dir, row.status, row.workers, row.logical_batch) == (run_dir, "finished", 2, 64)
    assert row.best_error == pytest.approx(min(y))
    assert page.history.table.item(0, 5).text() == "finished"
    assert len(page.tradeoff.points) == 1 and page.tradeoff.pareto == [0]
    assert page.tradeoff.points[0][0] > 50_000  # multiply-adds of the digits CNN


@pytest.mark.slow
def test_stop_ends_the_run_with_a_checkpoint(qtbot, tmp_path):
    project = copy_digits(str(tmp_path / "digits"), max_epoch=500)
    page = make_page(qtbot, project)
    page.workers.setValue(1)
    page.start_run()
    wait_until(qtbot, lambda: page.curves.point_count("train_loss") >= 2, 60)
    page.stop_button.click()
    run_dir, status, code = finish(qtbot, page)
    assert (status, code) == ("stopped", 3)
    st = runs.read_status(run_dir)
    assert st.status == "stopped" and st.resumable
    assert runs.list_checkpoints(run_dir)
    # status.json records where the run stopped (its checkpoint's iteration), and the bar shows that figure
    stopped_at = int(os.path.basename(runs.latest_checkpoint(run_dir))[5:-5])
    assert st.iteration == stopped_at
    assert page.progress.bar.format().startswith(f"stopped at iteration {stopped_at:,} / ")
    assert os.listdir(os.path.join(run_dir, "checkpoints"))
    assert "stopped with a checkpoint" in page.status.text()
    assert page.history.rows[0].status == "stopped"
    assert page.run_button.isEnabled() and not page.stop_button.isEnabled()


@pytest.mark.slow
def test_a_failing_run_shows_the_rank_and_the_engines_message(qtbot, tmp_path):
    project = copy_digits(str(tmp_path / "digits"), max_epoch=2)
    with open(project) as fh:
        text = fh.read()
    with open(project, "w") as fh:  # a learning rate that makes the loss NaN on the first iteration
        fh.write(text.replace("learning_rate: 0.001", "learning_rate: 1.0e+30"))
    page = make_page(qtbot, project)
    page.workers.setValue(1)
    page.start_run()
    run_dir, status, code = finish(qtbot, page)
    assert status == "failed" and code == 1
    text = page.error.toPlainText()
    assert page.error.isVisible()
    assert "rank 0 failed" in text and "optimizer.learning_rate" in text  # the engine's message and its fix
    assert "failed on rank 0" in page.status.text()
    assert page.history.rows[0].status == "failed"


def test_bad_input_is_listed_before_anything_starts(qtbot, tmp_path, monkeypatch):
    """The check before Run (issue 19) finds what the engine would refuse; the engine is not started."""
    project = copy_digits(str(tmp_path / "digits"))
    with open(project) as fh:
        text = fh.read()
    with open(project, "w") as fh:
        fh.write(text.replace("batch_size: 32", "batch_size: 0"))
    page = TrainingPage(ProjectDocument(), None)
    qtbot.addWidget(page)
    page.document.project.path = project  # a saved, unmodified document whose file is invalid
    monkeypatch.setattr(page.controller, "start_training", lambda *a, **k: pytest.fail("the engine was started"))
    assert page.start_run()
    wait_until(qtbot, lambda: not page.problems.isHidden(), 60)
    assert "config.batch_size" in page.problems.list.item(0).text()
    assert page.run_button.isEnabled()
    assert not os.path.exists(os.path.join(os.path.dirname(project), "results"))  # nothing left behind


def test_unsaved_changes_are_saved_or_the_run_is_cancelled(qtbot, tmp_path, monkeypatch):
    from nnconsole.app.config.commands import set_setting

    project = copy_digits(str(tmp_path / "digits"))
    page = make_page(qtbot, project)
    started = []
    monkeypatch.setattr(page.controller, "start_training", lambda path, n, **kw: started.append((path, n)))
    set_setting(page.document, "config.max_epoch", 4)
    monkeypatch.setattr(dialogs, "confirm_save", lambda parent, name: False)
    assert not page.start_run() and started == [] and page.document.modified
    monkeypatch.setattr(dialogs, "confirm_save", lambda parent, name: True)
    assert page.start_run()
    wait_until(qtbot, lambda: bool(started), 60)  # after the check before Run
    assert started == [(project, page.workers.value())] and not page.document.modified
    with open(project) as fh:
        assert "max_epoch: 4" in fh.read()
    # never saved: ask where
    fresh = TrainingPage(ProjectDocument(), None)
    qtbot.addWidget(fresh)
    target = str(tmp_path / "new" / "p.yaml")
    monkeypatch.setattr(dialogs, "choose_project_path", lambda parent, suggested: target)
    assert fresh.ensure_saved() and os.path.isfile(target) and fresh.document.path == target


def test_the_workers_choice_survives_saving_unsaved_changes(qtbot, tmp_path, monkeypatch):
    """Run saves unsaved changes first; that save must not put the project's Workers back."""
    from nnconsole.app.config.commands import set_setting

    project = copy_digits(str(tmp_path / "digits"), workers=1)
    page = make_page(qtbot, project)
    assert page.workers.value() == 1
    started = []
    monkeypatch.setattr(page.controller, "start_training", lambda path, n, **kw: started.append((path, n)))
    monkeypatch.setattr(dialogs, "confirm_save", lambda parent, name: True)
    set_setting(page.document, "config.max_epoch", 4)
    page.workers.setValue(3)
    assert page.start_run()
    wait_until(qtbot, lambda: bool(started), 60)
    assert started == [(project, 3)] and not page.document.modified
    assert page.workers.value() == 3


def test_progress_shows_the_planned_epochs_from_the_records(qtbot):
    """The epoch label's '/ N' comes from the run's own records (replays and attached runs too)."""
    from nnconsole.app.training.progress import RunProgress

    progress = RunProgress()
    qtbot.addWidget(progress)
    progress.update_from([{"type": "train", "epoch": 0.5, "iteration": 12, "total_iterations": 72}])
    assert progress.labels["epoch"].text() == "epoch 0.50 / 3"
    progress.reset("replaying...")
    assert progress.labels["epoch"].text() == "epoch -"
    progress.update_from([{"type": "train", "epoch": 1.25, "iteration": 10}])  # no total: no span shown
    assert progress.labels["epoch"].text() == "epoch 1.25"


# ---------------------------------------------------------------------------------------------- history

@pytest.mark.slow
def test_history_selects_overlays_exports_and_replays(qtbot, trained_digits_run, tmp_path, monkeypatch):
    project, run_dir = trained_digits_run
    other = copy_run(run_dir, "20000101_000000")  # an older run with the same curves
    try:
        page = make_page(qtbot, project)
        assert [r.run_dir for r in page.history.rows] == [run_dir, other]
        assert page.curves.primary == run_dir  # the newest run is shown
        records = [r for r in runs.iter_metrics(run_dir) if r["type"] in ("train", "validation")]
        assert page.curves.point_count("train_loss") == sum(r["type"] == "train" for r in records)
        page.history.table.selectRow(1)
        assert page.curves.primary == other
        page.history.set_checked(run_dir, True)
        assert page.curves.overlays() == [run_dir]
        assert page.curves.point_count("valid_error", run_dir) == 2
        from nnconsole.app.training import page as training_page

        read, reads = training_page.read_all_metrics, []
        monkeypatch.setattr(training_page, "read_all_metrics", lambda d: reads.append(d) or read(d))
        page.history.set_checked(other, True)  # the primary run and the overlay are drawn already
        page.history.set_checked(other, False)
        assert reads == [] and page.curves.overlays() == [run_dir]
        page.history.set_checked(run_dir, False)
        assert page.curves.overlays() == []
        # both runs cost the same: one is Pareto-optimal (equal points do not dominate each other)
        assert len(page.tradeoff.points) == 2 and len(page.tradeoff.pareto) == 2

        opened = []
        monkeypatch.setattr(dialogs, "open_folder", lambda path, parent=None: opened.append(path))
        page.history.open_button.click()
        assert opened == [other]
        csv_path, png_path = str(tmp_path / "curve.csv"), str(tmp_path / "curve.png")
        monkeypatch.setattr(dialogs, "choose_save_path",
                            lambda parent, caption, suggested, filters: csv_path if "CSV" in caption else png_path)
        page.save_csv_button.click()
        page.save_png_button.click()
        with open(csv_path, newline="") as fh:
            rows = list(csv.DictReader(fh))
        assert len(rows) == len(records) and rows[0]["type"] == "train" and float(rows[-1]["error"]) >= 0
        assert os.path.getsize(png_path) > 10_000
        page.log_scale.setChecked(True)
        assert page.curves.plots["loss"].ctrl.logYCheck.isChecked()

        # Replay the selected run: a new run from its snapshot, followed live, then listed.
        page.history.table.selectRow(0)
        page.history.replay_button.click()
        new_dir, status, code = finish(qtbot, page)
        assert status == "finished" and code == 0 and new_dir not in (run_dir, other)
        assert len(page.history.rows) == 3
        assert page.curves.point_count("valid_error") == 2
    finally:
        import shutil

        shutil.rmtree(other, ignore_errors=True)
        for extra in runs.list_runs(runs.results_root(project)):
            if os.path.abspath(extra) != run_dir:
                shutil.rmtree(extra, ignore_errors=True)


@pytest.mark.slow
def test_a_run_started_from_a_terminal_is_reattached_and_can_be_stopped(qtbot, tmp_path):
    project = copy_digits(str(tmp_path / "digits"), max_epoch=500)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    proc = subprocess.Popen([sys.executable, "-m", "nnconsole.engine.cli.main", "train", project, "--quiet"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        root = runs.results_root(project)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            found = runs.list_runs(root)
            if found and list(runs.iter_metrics(found[0], "train")):
                break
            time.sleep(0.1)
        run_dir = os.path.abspath(runs.list_runs(root)[0])
        page = make_page(qtbot, project)
        assert page.controller.is_attached() and page.live_run == run_dir
        assert "Following" in page.status.text()
        count = page.curves.point_count("train_loss")
        wait_until(qtbot, lambda: page.curves.point_count("train_loss") > count, 30)
        page.stop_run()
        _, status, _ = finish(qtbot, page)
        assert status == "stopped"
        assert proc.wait(timeout=30) == 3
        assert runs.list_checkpoints(run_dir)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# ---------------------------------------------------------------------------------------------- curves

def test_curves_keep_100000_points_downsampled(qtbot):
    """Every point is kept and the curve is drawn downsampled and clipped to the view; the update and
    repaint times with 1k-100k points are measured by bench/gui.py (ratios), not timed here."""
    curves = LearningCurves()
    qtbot.addWidget(curves)
    curves.resize(900, 700)
    curves.show()
    run = "/tmp/fake-run"
    curves.set_primary(run)
    n, chunk = 100_000, 2_000
    for start in range(0, n, chunk):  # 50 timer ticks of 2,000 new records each
        records = [{"type": "train", "epoch": i / 1000, "iteration": i, "loss": 1.0 / (1 + i / 5000),
                    "error": 0.5, "lr": 0.001} for i in range(start, start + chunk)]
        curves.add_records(run, records)
    assert curves.point_count("train_loss") == n
    curve = curves.curve("train_loss")
    assert len(curve.getData()[0]) == n
    assert curve.opts["autoDownsample"] and curve.opts["downsampleMethod"] == "peak" and curve.opts["clipToView"]
    assert not curves.grab().isNull()  # a full repaint of the three plots


def settle(qtbot, widget) -> None:
    """Paint, then let the layout requests that painting posted run (pyqtgraph sizes axes while painting)."""
    for _ in range(3):
        widget.grab()
        qtbot.wait(20)


def test_curves_keep_aligned_fixed_axes_as_values_grow(qtbot):
    """The three plots share one x range: their data areas line up, and a wider y label (a loss of
    1234.5, a learning rate of 0.000125) neither resizes an axis nor re-lays out the plots."""
    curves = LearningCurves()
    qtbot.addWidget(curves)
    curves.resize(900, 700)
    curves.show()
    run = "/tmp/fake-run"
    curves.set_primary(run, [{"type": "train", "epoch": 0.5, "iteration": 5, "total_iterations": 100,
                              "loss": 0.5, "error": 0.1, "lr": 0.1}])
    settle(qtbot, curves)

    def geometry():
        return [(round(p.vb.sceneBoundingRect().left(), 1), round(p.vb.sceneBoundingRect().width(), 1))
                for p in curves.plots.values()]
    before = geometry()
    assert len(set(before)) == 1, before  # one left edge and width for the three data areas
    curves.add_records(run, [{"type": "train", "epoch": 1.0, "iteration": 10, "loss": 1234.5, "error": 0.9,
                              "lr": 0.000125}])
    settle(qtbot, curves)
    assert geometry() == before
    # One x axis, under the bottom plot; the plots above draw its grid lines at the same places.
    assert [p.getAxis("bottom").isVisible() for p in curves.plots.values()] == [False, False, True]
    lr = curves.plots["lr"]
    (x0, x1), _ = lr.vb.viewRange()
    majors = lr.getAxis("bottom").tickValues(x0, x1, lr.vb.width())[0][1]
    expected = [round(lr.vb.mapViewToScene(QPointF(x, 0)).x(), 1) for x in majors]
    for key in ("loss", "error"):
        plot = curves.plots[key]
        drawn = [round(plot.vb.mapToScene(line.p1()).x(), 1) for line in plot.x_grid.lines()[0]]
        assert len(expected) >= 3 and drawn == pytest.approx(expected, abs=1.0), key  # within a pixel


def test_growing_series_keeps_room_after_a_bulk_load_and_old_views_intact():
    from nnconsole.app.widgets.plots import GrowingSeries

    series = GrowingSeries()
    series.extend(range(100_000), range(100_000))
    x_before, _ = series.data()
    capacity = len(series._x)
    series.extend([100_000.0], [1.0])  # the first live append after loading a run: no reallocation
    assert len(series._x) == capacity > 100_000
    series.extend(range(capacity), range(capacity))  # this one grows
    x, y = series.data()
    assert len(x) == 100_001 + capacity and x[100_000] == 100_000.0 and y[-1] == capacity - 1
    assert len(x_before) == 100_000 and x_before[-1] == 99_999.0


def test_pareto_front():
    points = [(100, 0.10), (50, 0.20), (200, 0.05), (150, 0.12), (50, 0.25), (300, 0.05)]
    assert pareto_front(points) == [1, 0, 2]
    assert pareto_front([]) == []


def test_an_engine_that_cannot_start_is_reported(qtbot, tmp_path, monkeypatch):
    from nnconsole.app.bridge import engine_process

    project = copy_digits(str(tmp_path / "digits"))
    page = make_page(qtbot, project)
    monkeypatch.setattr(engine_process, "engine_program", lambda: (str(tmp_path / "no-such-python"), []))
    with qtbot.waitSignal(page.controller.launch_failed, timeout=60_000) as blocker:
        page.start_run()
    assert "could not start the engine" in blocker.args[0] and "no-such-python" in blocker.args[0]
    assert page.error.isVisible() and page.run_button.isEnabled() and not page.controller.is_running()


def test_data_outside_the_project_folder_needs_consent(qtbot, tmp_path, monkeypatch):
    import shutil

    import yaml

    project = copy_digits(str(tmp_path / "digits"))
    shutil.move(str(tmp_path / "digits" / "data"), str(tmp_path / "shared_data"))
    data = yaml.safe_load(open(project))
    data["datasets"]["training"] = "../shared_data/train.csv"
    data["datasets"]["validation"] = "../shared_data/validation.csv"
    yaml.safe_dump(data, open(project, "w"), sort_keys=False)
    page = make_page(qtbot, project)
    assert page.outside_data() == [str(tmp_path / "shared_data" / "train.csv"),
                                   str(tmp_path / "shared_data" / "validation.csv")]
    started = []
    monkeypatch.setattr(page.controller, "start_training", lambda *a, **k: started.append((a, k)))
    asked = []
    monkeypatch.setattr(dialogs, "confirm_outside_data", lambda parent, paths: asked.append(paths) or False)
    assert not page.start_run() and started == [] and len(asked) == 1  # refused: nothing runs
    monkeypatch.setattr(dialogs, "confirm_outside_data", lambda parent, paths: True)
    assert page.start_run()
    wait_until(qtbot, lambda: bool(started), 60)  # after the check before Run
    assert started[-1][1]["allow_outside_data"] is True


def test_data_inside_the_project_folder_runs_without_asking(qtbot, tmp_path, monkeypatch):
    page = make_page(qtbot, copy_digits(str(tmp_path / "digits")))
    assert page.outside_data() == []
    started = []
    monkeypatch.setattr(page.controller, "start_training", lambda *a, **k: started.append(k))
    assert page.start_run()
    wait_until(qtbot, lambda: bool(started), 60)
    assert started[-1]["allow_outside_data"] is False


def test_shared_grid_leaves_out_lines_closer_than_a_few_pixels(qtbot):
    """In a squeezed window the grid thins out instead of painting the plot grey."""
    import pyqtgraph as pg

    from nnconsole.app.widgets.grid import MIN_SPACING_PX, tick_levels

    axis = pg.AxisItem("bottom")
    majors, minors = tick_levels(axis, 0.0, 100.0, 300.0, 2)
    assert majors and minors  # 20-epoch majors and 10-epoch minors, 30+ px apart
    spacing = majors[1] - majors[0]
    narrow = 100.0 / spacing * MIN_SPACING_PX * 1.5  # majors 1.5x the limit apart, minors 0.75x
    majors_narrow, minors_narrow = tick_levels(axis, 0.0, 100.0, narrow, 2)
    assert majors_narrow == majors and minors_narrow == ()
    assert tick_levels(axis, 0.0, 100.0, 10.0, 2) == ((), ())
