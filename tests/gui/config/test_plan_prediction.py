"""CONFIG plan panel: the predicted time per epoch of each layout and its verdict (issue 20)."""
from __future__ import annotations


import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLineEdit

from tests.gui.support import open_tab_page
from tests.support.runs import measured_run

from nnconsole.app.config.page import create_page
from nnconsole.engine.check.project_file import load_valid_project

pytestmark = pytest.mark.gui


def test_the_panel_says_two_machines_of_two_are_slower_on_the_assumed_network(qtbot, digits_project, tmp_path):
    measured_run(digits_project, 0.0005)  # 0.5 ms per iteration: the 55 kB all-reduce over 1 Gbit/s dominates
    page = open_tab_page(qtbot, create_page, digits_project)
    prediction = page.plan_panel.prediction
    assert [prediction.table.item(r, 0).text() for r in range(prediction.table.rowCount())] == [
        "1 host x 1", "1 host x 2", "1 host x 4", "1 host x 8"]
    assert "set Hosts" in prediction.assumptions.text() and "measured on this machine: 20260101_000000 (1 worker" in prediction.assumptions.text()

    hosts = page.findChild(QLineEdit, "field_multi_gpu.hosts")
    hosts.setFocus()
    hosts.selectAll()
    qtbot.keyClick(hosts, Qt.Key_Backspace)
    qtbot.keyClicks(hosts, "a:2,b:2")
    qtbot.keyClick(hosts, Qt.Key_Return)
    qtbot.waitUntil(lambda: prediction.table.rowCount() == 4 and prediction.table.item(3, 0).text() == "2 hosts x 2")
    assert prediction.verdict("2 hosts x 2").startswith("slower than 1 host x 2")
    assert prediction.verdict("1 host x 2").endswith("faster than 1 worker")
    by = {f"{p.hosts} host{'s' if p.hosts > 1 else ''} x {p.workers_per_host}": p for p in prediction.predictions}
    # 1,437 samples: 23 iterations of 64 on 2 workers, 12 of 128 on 4; each 0.5 ms of compute plus the all-reduce
    assert by["2 hosts x 2"].epoch_s == pytest.approx(12 * (0.0005 + by["2 hosts x 2"].allreduce_s))
    assert prediction.table.item(3, 1).text() == f"{by['2 hosts x 2'].epoch_s:.3g}"
    assert page.plan_panel.grab().save(str(tmp_path / "plan_prediction.png"))  # docs/screenshots/config_plan_prediction.png


def test_a_bad_host_entry_says_so_instead_of_a_table(qtbot, digits_project):

    page = open_tab_page(qtbot, create_page, digits_project)
    project = load_valid_project(digits_project, check_datasets=False)
    project.multi_gpu.workers = 1
    panel = page.plan_panel
    panel.prediction.refresh(project, [1, 2], lambda k: (_ for _ in ()).throw(ValueError(f"no plan for {k}")))
    assert panel.prediction.table.rowCount() == 0 and "No prediction: no plan for 1" in panel.prediction.assumptions.text()
