"""The progress strip shows the run the TRAINING tab shows (issue 28 item 7): an ended run's own figures (never
another run's, never "idle"), no ETA once a run has ended, the live run's records only while it is the one shown;
and the Workers box says when it differs from CONFIG's setting."""
from __future__ import annotations

import os

import pytest

from tests.gui.support import copy_digits, fake_run, open_tab_page, train_records

from nnconsole.app.training.page import TrainingPage, create_page
from nnconsole.engine.rundir.protocol import RunStatus

pytestmark = pytest.mark.gui
SHOTS = "/work/shots/runs"
TAG = os.environ.get("SHOT_TAG", "after")


def figures(page: TrainingPage) -> dict:
    labels = page.progress.labels
    return {"bar": page.progress.bar.format(), "eta": labels["eta"].text(), "sps": labels["throughput"].text()}


def with_speed(records: list, samples_per_s: float, upto: int) -> list:
    """Train records up to iteration ``upto`` at ``samples_per_s`` (with an ETA, as a live run writes them)."""
    out = [dict(r, samples_per_s=samples_per_s) for r in records if r["iteration"] <= upto]
    return out


@pytest.fixture
def two_runs(qtbot, tmp_path):
    project = copy_digits(str(tmp_path / "digits"))
    records = train_records(2)  # 46 iterations
    done = fake_run(project, "20240101_000000", records=with_speed(records, 320.0, 46), iteration=46)
    stopped = fake_run(project, "20240102_000000", status="stopped", records=with_speed(records, 111.0, 20),
                       iteration=20)
    page = open_tab_page(qtbot, create_page, project)
    page.resize(1300, 800)
    return page, done, stopped


def test_an_ended_run_shows_its_own_figures_and_no_eta(two_runs):
    page, done, stopped = two_runs
    page.history.select_run(stopped)
    page.grab().save(f"{SHOTS}/item7_stopped_run_{TAG}.png")
    assert figures(page) == {"bar": "stopped at iteration 20 / 46", "eta": "ETA -", "sps": "111 samples/s"}
    page.history.select_run(done)
    assert figures(page) == {"bar": "finished at iteration 46", "eta": "ETA -", "sps": "320 samples/s"}
    assert page.progress.bar.value() == 1000
    page.history.select_run(stopped)
    assert page.progress.bar.value() == int(1000 * 20 / 46)


def test_the_live_runs_records_and_end_do_not_overwrite_another_shown_run(two_runs, monkeypatch, tmp_path):
    page, done, stopped = two_runs
    live = fake_run(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(done))), "project.yaml"),
                    "20240103_000000", status="running", records=[])
    monkeypatch.setattr(TrainingPage, "live_run", property(lambda self: live))
    page.show_run(live)
    fast = [dict(r, samples_per_s=5104.0) for r in train_records(1) if r["type"] == "train"]
    page._records_received(page.controller, live, fast)
    assert figures(page)["sps"] == "5,104 samples/s" and page.progress.run_dir == live
    page.show_run(stopped)  # the user selects another run in the history while the live one goes on
    page._records_received(page.controller, live, fast)
    assert figures(page) == {"bar": "stopped at iteration 20 / 46", "eta": "ETA -", "sps": "111 samples/s"}
    page._run_finished(page.controller, live, str(RunStatus.FINISHED), 0)
    assert figures(page)["bar"] == "stopped at iteration 20 / 46"


def test_stop_leaves_no_eta(qtbot):
    from nnconsole.app.training.progress import RunProgress

    strip = RunProgress()
    qtbot.addWidget(strip)
    strip.reset("starting...", "/runs/x")
    strip.update_from([dict(r, eta=120.0) for r in train_records(1) if r["type"] == "train"][:1])
    assert strip.labels["eta"].text() != "ETA -"
    strip.finish(RunStatus.STOPPED, 12)
    assert strip.labels["eta"].text() == "ETA -" and strip.bar.format() == "stopped at iteration 12 / 23"


def test_the_workers_box_says_when_it_differs_from_config(qtbot, tmp_path):
    project = copy_digits(str(tmp_path / "digits"), workers=1)
    page = open_tab_page(qtbot, create_page, project)
    page.resize(1300, 800)
    assert page.workers.value() == 1 and page.workers_note.isHidden()
    page.workers.setValue(3)
    assert not page.workers_note.isHidden() and page.workers_note.text() == "(CONFIG: 1)"
    assert "multi_gpu.workers" in page.workers_note.toolTip()
    page.grab().save(f"{SHOTS}/item7_workers_note_{TAG}.png")
    page.document.set_setting("multi_gpu.workers", 2)  # CONFIG changed: the box follows it
    assert page.workers.value() == 2 and page.workers_note.isHidden()
