"""Issue 25 item 10 (the GUI's share): a project whose ``multi_gpu.hosts`` hold slot counts near 2^20 built the
predictor's layouts for 16 s and 1.6 GB on opening before being refused. Now such slot counts are refused as the
project is opened (the same check as ``validate``), and slots a run may have but the predictor does not compare
show "No prediction: ..." on the CONFIG tab at once."""
from __future__ import annotations

import time

import pytest
import yaml

from tests.gui.support import open_tab_page

from nnconsole.app.config.page import create_page
from nnconsole.engine.project.errors import ProjectError
from tests.support.timing import budget

pytestmark = pytest.mark.gui


def _with_hosts(path: str, hosts) -> None:
    data = yaml.safe_load(open(path))
    data.setdefault("multi_gpu", {})["hosts"] = hosts
    yaml.safe_dump(data, open(path, "w"))


def test_slot_counts_near_2_20_are_refused_on_opening(qtbot, digits_project):
    _with_hosts(digits_project, ["a:1048576", "b:1048576"])
    start = time.monotonic()
    with pytest.raises(ProjectError, match=r"multi_gpu\.hosts\[0\]: 'a:1048576': the slot count"):
        open_tab_page(qtbot, create_page, digits_project)
    assert time.monotonic() - start < budget(5)


def test_slots_beyond_the_predictor_say_no_prediction_at_once(qtbot, digits_project):
    _with_hosts(digits_project, ["a:30000", "b:30000"])
    start = time.monotonic()
    page = open_tab_page(qtbot, create_page, digits_project)
    prediction = page.plan_panel.prediction
    qtbot.waitUntil(lambda: prediction.assumptions.text().startswith("No prediction:"))
    assert time.monotonic() - start < budget(10) and "at most 1,024 workers" in prediction.assumptions.text()
    assert prediction.table.rowCount() == 0
