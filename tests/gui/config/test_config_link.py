"""CONFIG: the "Link between hosts" field (``multi_gpu.link``, issue 20) drives the plan panel's prediction.

Typing a link re-predicts (undoably) and the assumptions say it came from the project; a link that cannot be read
shows "No prediction: ..." with the validation's message instead of a table; the check before Run lists it and
points at the field."""
from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLineEdit

from tests.gui.support import open_tab_page

from nnconsole.app.config.page import create_page
from nnconsole.engine.check.project_file import load_valid_project

pytestmark = pytest.mark.gui


def _type(qtbot, field: QLineEdit, text: str) -> None:
    field.setFocus()
    field.selectAll()
    qtbot.keyClick(field, Qt.Key_Backspace)
    qtbot.keyClicks(field, text)
    qtbot.keyClick(field, Qt.Key_Return)


def test_typing_a_link_repredicts_says_where_it_came_from_and_undoes(qtbot, digits_project, tmp_path):
    page = open_tab_page(qtbot, create_page, digits_project)
    prediction = page.plan_panel.prediction
    said = prediction.assumptions
    assert "assumed (1gbit,100us): gigabit Ethernet" in said.text()
    _type(qtbot, page.findChild(QLineEdit, "field_multi_gpu.hosts"), "a:2,b:2")
    qtbot.waitUntil(lambda: prediction.table.rowCount() == 4)
    before = {(p.hosts, p.workers_per_host): p.allreduce_s for p in prediction.predictions}

    link = page.findChild(QLineEdit, "field_multi_gpu.link")
    assert link is not None
    _type(qtbot, link, "100mbit,1ms")
    qtbot.waitUntil(lambda: "link from the project (multi_gpu.link): 100 Mbit/s, 1 ms" in said.text())
    assert page.document.project.multi_gpu.link == "100mbit,1ms" and "assumed" not in said.text()
    after = {(p.hosts, p.workers_per_host): p.allreduce_s for p in prediction.predictions}
    assert after[(2, 1)] > 5 * before[(2, 1)] and after[(1, 2)] == pytest.approx(before[(1, 2)])  # only between hosts
    assert "between hosts 100 Mbit/s, 1 ms" in prediction.table.item(3, 1).toolTip()
    assert page.plan_panel.grab().save(str(tmp_path / "plan_link.png"))

    assert "Link between hosts" in page.document.undo_stack.undoText()
    page.document.undo_stack.undo()
    qtbot.waitUntil(lambda: "assumed (1gbit,100us)" in said.text())
    assert page.document.project.multi_gpu.link == "" and link.text() == ""


def test_a_link_that_cannot_be_read_says_so_instead_of_a_table(qtbot, digits_project):
    page = open_tab_page(qtbot, create_page, digits_project)
    prediction = page.plan_panel.prediction
    assert prediction.table.rowCount() > 0
    _type(qtbot, page.findChild(QLineEdit, "field_multi_gpu.link"), "fast,1ms")
    qtbot.waitUntil(lambda: prediction.table.rowCount() == 0)
    text = prediction.assumptions.text()
    assert text.startswith("No prediction: multi_gpu.link: 'fast,1ms' is not a link") and "e.g. 1gbit,100us" in text
    assert page.plan_panel.table.rowCount() > 0  # the plan itself is still shown


def test_the_check_before_run_lists_a_bad_link_and_points_at_its_field(digits_project):
    from nnconsole.app.training.preflight import check_project, target_of
    from nnconsole.engine.project.io import save_project

    project = load_valid_project(digits_project, check_datasets=False)
    project.multi_gpu.link = "1gbit,1parsec"
    save_project(project, digits_project, backup=False)
    problems = [p for p in check_project(digits_project) if p.path == "multi_gpu.link"]
    assert len(problems) == 1 and problems[0].severity == "error"
    assert "'1parsec' in '1gbit,1parsec' is not a latency" in problems[0].message
    target = target_of(problems[0], [])
    assert (target.tab, target.field) == ("config", "multi_gpu.link")


def test_half_precision_all_reduce_halves_the_predicted_bytes(qtbot, digits_project):
    from PySide6.QtWidgets import QComboBox

    page = open_tab_page(qtbot, create_page, digits_project)
    prediction = page.plan_panel.prediction
    _type(qtbot, page.findChild(QLineEdit, "field_multi_gpu.hosts"), "a:2,b:2")
    qtbot.waitUntil(lambda: prediction.table.rowCount() == 4)
    assert "gradients: 0.0548 MB per iteration, sent as float32" in prediction.assumptions.text()
    before = {(p.hosts, p.workers_per_host): p.allreduce_s for p in prediction.predictions}
    choice = page.findChild(QComboBox, "field_multi_gpu.allreduce_precision")
    choice.setCurrentIndex(choice.findText("half"))
    qtbot.waitUntil(lambda: "sent as float16: 0.0274 MB" in prediction.assumptions.text())
    after = {(p.hosts, p.workers_per_host): p.allreduce_s for p in prediction.predictions}
    # gigabit Ethernet assumed: 2 hosts x 1 send 27,412 B less (13,706 parameters) over 125 MB/s, and pay
    # 2 x 100 us more for the scales' all-reduce
    assert before[(2, 1)] - after[(2, 1)] == pytest.approx(27_412 / 125e6 - 2e-4)
