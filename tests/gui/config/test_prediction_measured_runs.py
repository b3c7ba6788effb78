"""CONFIG's predicted time per epoch follows the project's runs on this machine (issue 28 item 2): before any run
it says "unknown until one run" (never 0 s); after a 1-worker and a 2-worker run whose all-reduce took 67% it
says 2 workers are slower, and names the runs it used."""
from __future__ import annotations

import os

import pytest

from tests.gui.support import open_tab_page
from tests.support.timed_runs import timed_run

from nnconsole.app.config.page import create_page

pytestmark = pytest.mark.gui
SHOTS = "/work/shots/runs"
TAG = os.environ.get("SHOT_TAG", "after")  # "before" when run against the unfixed code


def cells(prediction, column: int) -> dict:
    table = prediction.table
    return {table.item(r, 0).text(): table.item(r, column).text() for r in range(table.rowCount())}


def test_before_any_run_the_table_says_unknown_not_zero(qtbot, digits_project):
    page = open_tab_page(qtbot, create_page, digits_project)
    prediction = page.plan_panel.prediction
    page.plan_panel.grab().save(f"{SHOTS}/item2_no_run_{TAG}.png")
    seconds = cells(prediction, 1)
    assert set(seconds.values()) == {"unknown until one run"}
    assert "unknown until one run" in prediction.assumptions.text()


def test_measured_runs_turn_the_verdict_and_are_named(qtbot, digits_project):
    timed_run(digits_project, "20260101_000000", 1, 32, 32 / 6654.0, 0.0)
    timed_run(digits_project, "20260101_000100", 2, 32, 64 / 2450.0, 0.67)
    page = open_tab_page(qtbot, create_page, digits_project)
    prediction = page.plan_panel.prediction
    page.plan_panel.grab().save(f"{SHOTS}/item2_measured_{TAG}.png")
    verdicts = cells(prediction, 2)
    assert verdicts["1 host x 2"].startswith("slower than 1 host x 1")
    assert not any("faster" in v for v in verdicts.values())  # on this machine more workers only lose time
    text = prediction.assumptions.text()
    assert "measured on this machine" in text and "20260101_000000 (1 worker" in text
    assert "20260101_000100 (2 workers" in text
    two = next(r for r in range(prediction.table.rowCount()) if prediction.table.item(r, 0).text() == "1 host x 2")
    assert "run 20260101_000100" in prediction.table.item(two, 1).toolTip()
