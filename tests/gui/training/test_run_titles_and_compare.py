"""Run titles and comparisons (issue 28 item 11): the titles users give runs (note.json) name them in the compare
legend, the trade-off graph, EVALUATION's run list and the start page's Recent runs; a ticked run stays drawn when
another run becomes the shown one (a new run starting); each legend marker has its curve's colour."""
from __future__ import annotations

import os

import pytest

from tests.gui.support import copy_digits, fake_run, open_tab_page, train_records

from nnconsole.app.evaluation.page import create_page as create_evaluation_page
from nnconsole.app.shell.start_page import recent_runs
from nnconsole.app.training.page import create_page
from nnconsole.engine.rundir.notes import write_note

pytestmark = pytest.mark.gui
SHOTS = "/work/shots/runs"
TAG = os.environ.get("SHOT_TAG", "after")


def titled_run(project: str, name: str, title: str, best: float) -> str:
    records = [dict(r, loss=r["loss"] * (1 + best), error=best) for r in train_records(2)]
    run_dir = fake_run(project, name, records=records, best_validation_error=best, total_macs=1000 + int(best * 1e4))
    open(os.path.join(run_dir, "parameters_best.h5"), "wb").close()
    if title:
        write_note(run_dir, title, "")
    return run_dir


@pytest.fixture
def runs3(tmp_path):
    project = copy_digits(str(tmp_path / "digits"))
    wide = titled_run(project, "20240101_000000", "wide conv", 0.10)
    fast = titled_run(project, "20240102_000000", "lr 0.01", 0.20)
    plain = titled_run(project, "20240103_000000", "", 0.05)
    return project, wide, fast, plain


def legend_texts(page) -> list:
    legend = page.curves.plots["loss"].legend
    return [label.text for _sample, label in legend.items]


def test_titles_name_runs_in_the_legend_tradeoff_evaluation_and_recent_runs(qtbot, runs3):
    project, wide, fast, plain = runs3
    page = open_tab_page(qtbot, create_page, project)
    page.resize(1400, 900)
    page.history.select_run(plain)
    page.history.set_checked(wide, True)
    page.history.set_checked(fast, True)
    page.grab().save(f"{SHOTS}/item11_titles_{TAG}.png")
    texts = legend_texts(page)
    assert any(t.startswith("wide conv ") for t in texts) and any(t.startswith("lr 0.01 ") for t in texts)
    assert not any("20240101_000000" in t for t in texts)
    assert sorted(page.tradeoff.names) == sorted(["wide conv", "lr 0.01", "20240103_000000"])
    evaluation = open_tab_page(qtbot, create_evaluation_page, project)
    listed = [evaluation.run_combo.itemText(i) for i in range(evaluation.run_combo.count())]
    assert any(t.startswith("wide conv (") for t in listed) and any(t.startswith("lr 0.01 (") for t in listed)
    labels = [r.label() for r in recent_runs([project])]
    assert any(" / wide conv " in t for t in labels) and any(" / 20240103_000000 " in t for t in labels)


def test_a_ticked_run_stays_drawn_when_another_becomes_the_shown_run(qtbot, runs3):
    project, wide, fast, plain = runs3
    page = open_tab_page(qtbot, create_page, project)
    page.history.select_run(wide)
    page.history.set_checked(wide, True)  # ticked while it is the shown run
    page.history.set_checked(fast, True)
    page.show_run(plain)  # another run is shown (as when a new run starts and is followed)
    assert set(page.history.checked_runs()) == {wide, fast}
    assert set(page.curves.overlays()) == {wide, fast}  # every tick has its curves
    page.show_run(wide)
    assert page.curves.primary == wide and set(page.curves.overlays()) == {fast}


def test_each_legend_marker_has_its_curves_colour(qtbot, runs3):
    """The legend paints a marker from the curve's scatter (pyqtgraph's ItemSample): its colour must be the
    curve's, also before the curve has any point (a run stopped before its first validation, a live run's start)."""
    project, wide, fast, plain = runs3
    early = fake_run(project, "20240104_000000", status="stopped",
                     records=[r for r in train_records(2) if r["type"] == "train" and r["iteration"] <= 20])
    page = open_tab_page(qtbot, create_page, project)
    page.resize(1300, 800)
    page.history.select_run(early)  # no validation point yet
    page.history.set_checked(wide, True)
    page.history.set_checked(fast, True)
    page.grab().save(f"{SHOTS}/item11_legend_markers_{TAG}.png")
    checked = 0
    for plot in ("loss", "error"):
        for sample, label in page.curves.plots[plot].legend.items:
            opts = sample.item.opts
            if not opts.get("symbol"):
                continue
            line = opts["pen"].color().name()
            marker = sample.item.scatter.opts["brush"].color().name()  # what ItemSample.paint fills it with
            assert marker == line, f"{plot}: {label.text}: marker {marker} on a {line} curve"
            checked += 1
    assert checked == 6  # validation of the shown run and of the two compared runs, in both plots


def test_overlays_never_share_a_colour(qtbot, runs3, tmp_path):
    """Ticking, unticking and ticking again: each overlaid run keeps a colour no other shown run has, so its
    legend entry (line and marker) names one curve."""
    project, wide, fast, plain = runs3
    fourth = titled_run(project, "20240104_000000", "", 0.3)
    page = open_tab_page(qtbot, create_page, project)
    page.history.select_run(fourth)
    page.history.set_checked(wide, True)
    page.history.set_checked(fast, True)
    page.history.set_checked(wide, False)
    page.history.set_checked(plain, True)

    def pen(run_dir):
        return page.curves.runs[run_dir].curves["valid_loss"].opts["pen"].color().name()
    assert set(page.curves.overlays()) == {fast, plain}
    assert pen(fast) != pen(plain)
    page.grab().save(f"{SHOTS}/item11_overlay_colours_{TAG}.png")
