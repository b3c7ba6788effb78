"""The DATASET tab's cache disk budget (``datasets.cache_budget``, issue 31): edited beside the other cache setting
with the schema's label, unit and tooltip, undoable, refusing what is not a budget with a line that says why,
saved through the project's own save (comments kept); the tab's own load of the datasets honours it; and the
line beside it says what the loaded datasets' decoded images take against it."""
from __future__ import annotations

import csv
import glob
import json
import math
import os

import pytest
from PySide6.QtCore import Qt

from tests.gui.support import open_tab_page

from nnconsole.app.dataset.cache_budget import BUDGET, CacheNeed, budget_bytes, budget_summary, size_text
from nnconsole.app.dataset.page import create_page
from nnconsole.engine.project.io import load_project
from nnconsole.engine.project.schema import setting

pytestmark = pytest.mark.gui
DIGIT_PIXELS = 1 * 8 * 8  # the digits' sample shape, uint8


def _page(qtbot, project_path):
    page = open_tab_page(qtbot, create_page, project_path)
    page.wait_for_checks(60)
    qtbot.waitUntil(lambda: all(page.states[s].need is not None for s in ("training", "validation")), timeout=60000)
    return page


def _type(qtbot, page, text: str, leave: bool = False) -> None:
    field = page.budget_box.editor.widget
    field.setFocus()
    field.selectAll()
    qtbot.keyClicks(field, text) if text else qtbot.keyClick(field, Qt.Key_Backspace)
    if leave:
        field.editingFinished.emit()


def _paste(page, text: str, leave: bool = False) -> None:
    """``text`` put in the field at once, as a paste does (typing commits each acceptable prefix: 1, 1e4 ...)."""
    field = page.budget_box.editor.widget
    field.setText(text)
    field.textEdited.emit(text)
    if leave:
        field.editingFinished.emit()


def _distinct_files(csv_path: str) -> int:
    with open(csv_path, newline="", encoding="utf-8") as f:
        return len({row[0].strip() for row in list(csv.reader(f))[1:]})


def test_the_budget_is_shown_with_the_schemas_label_unit_tooltip_and_undo_label(qtbot, digits_project):
    page = _page(qtbot, digits_project)
    box, spec = page.budget_box, setting(BUDGET)
    field = box.editor.widget
    assert field.objectName() == f"field_{BUDGET}" and field.toolTip() == spec.doc
    assert "80% of the cache folder's free space" in spec.doc
    assert box.label.text() == "Cache disk budget:" and box.unit.text().startswith("GB (0 = automatic: 80%")
    assert field.text() == "0.0" and field.isEnabled()
    _type(qtbot, page, "2.5")
    document = page.document
    assert document.project.datasets.cache_budget == 2.5
    assert document.undo_stack.undoText() == "Change Cache disk budget (GB)"
    document.undo_stack.undo()
    assert document.project.datasets.cache_budget == 0.0 and field.text() == "0.0"
    document.undo_stack.redo()
    assert field.text() == "2.5"


@pytest.mark.parametrize("text", ["-1", "nan", "inf", "-inf", "1e400", "3e9", "abc", "2,5", ""])
def test_a_value_that_is_not_a_budget_is_refused_with_a_line_saying_why_and_the_setting_kept(qtbot, digits_project,
                                                                                             text):
    page = _page(qtbot, digits_project)
    _type(qtbot, page, "4")
    stack = page.document.undo_stack.count()
    _paste(page, text)
    box = page.budget_box
    assert page.document.project.datasets.cache_budget == 4.0 and page.document.undo_stack.count() == stack
    assert box.problem.isVisibleTo(page)
    assert box.problem.text() == (f"Cache disk budget (GB): {text!r} is not accepted: use a finite number >= 0, "
                                  "<= 2,147,483,647; 0 lets nnconsole decide from the free space.")
    _paste(page, text, leave=True)  # leaving the field: it shows the value kept, and the line says so
    assert box.editor.widget.text() == "4.0"
    assert box.problem.text().endswith(f"{text!r} was not taken (use a number >= 0, <= 2,147,483,647; 0 lets "
                                       "nnconsole decide from the free space); it stays 4.0.")
    _type(qtbot, page, "5")  # a good value clears the line
    assert not box.problem.isVisibleTo(page) and page.document.project.datasets.cache_budget == 5.0


def test_the_budget_is_saved_through_the_projects_save_keeping_its_comments(qtbot, digits_project):
    page = _page(qtbot, digits_project)
    before = open(digits_project, encoding="utf-8").read()
    _type(qtbot, page, "12.5")
    page.document.save()
    after = open(digits_project, encoding="utf-8").read()
    assert "  cache_budget: 12.5\n" in after
    kept = [line for line in before.splitlines() if line.lstrip().startswith("#")]
    assert kept and all(line in after.splitlines() for line in kept)
    assert load_project(digits_project).datasets.cache_budget == 12.5
    assert open(digits_project + ".bak", encoding="utf-8").read() == before  # the atomic save's backup


def test_the_line_beside_it_says_what_the_loaded_datasets_take_and_whether_it_fits(qtbot, digits_project):
    page = _page(qtbot, digits_project)
    folder = os.path.dirname(digits_project)
    train = _distinct_files(os.path.join(folder, "data", "train.csv"))
    valid = _distinct_files(os.path.join(folder, "data", "validation.csv"))
    assert page.states["training"].need.pixel_bytes == train * DIGIT_PIXELS
    assert page.states["validation"].need.pixel_bytes == valid * DIGIT_PIXELS
    text = page.budget_box.need.text()
    automatic = budget_bytes(page.states["training"].path, 0.0)
    assert text == (f"Decoded: training {train:,} images {size_text(train * DIGIT_PIXELS)}, validation {valid:,} "
                    f"images {size_text(valid * DIGIT_PIXELS)}; budget {size_text(automatic)} (80% of "
                    f"{size_text(automatic / 0.8)} free): both fit: cached.")
    st = os.statvfs(folder)
    assert math.isclose(automatic, st.f_bavail * st.f_frsize * 0.8, rel_tol=0.01)
    token = page.states["training"].token
    between = (valid * DIGIT_PIXELS + train * DIGIT_PIXELS) / 2 / 1e9  # validation fits, training does not
    _type(qtbot, page, repr(between))
    assert page.states["training"].token == token  # a budget edit starts no new load of the datasets
    assert page.budget_box.need.text().endswith("training over (decoded per batch), validation fits (cached).")
    page.budget_box.editor.widget.clearFocus()
    page.option_editors[[e.spec.dotted for e in page.option_editors].index("datasets.cache")].widget.click()
    assert not page.budget_box.editor.widget.isEnabled()
    assert page.budget_box.need.text().startswith("The cache is off")


def test_the_tabs_own_load_keeps_to_the_budget_and_writes_no_pixels_past_it(qtbot, digits_project):
    """Before, the tab loaded the datasets with the automatic budget whatever the project said: it wrote the
    decoded images a run with a small budget would not write (an ImageNet-sized copy, at that scale)."""
    text = open(digits_project, encoding="utf-8").read()
    open(digits_project, "w", encoding="utf-8").write(text.replace("  cache: true\n",
                                                                   "  cache: true\n  cache_budget: 1.0e-07\n"))
    page = _page(qtbot, digits_project)
    cache = os.path.join(os.path.dirname(digits_project), "data", ".nnconsole-cache")
    entries = [e for e in glob.glob(os.path.join(cache, "*-*-*")) if os.path.isdir(e)]
    assert len(entries) == 2  # training and validation, each its index only
    for entry in entries:
        meta = json.load(open(os.path.join(entry, "meta.json")))
        assert meta["index"]["on_the_fly"] is True and not os.path.exists(os.path.join(entry, "v0.npy"))
    assert page.budget_box.need.text().endswith("over: only the index is cached, images decoded per batch.")
    assert page.states["training"].loaded == {"x": (1, 8, 8), "y": (1,)}  # the preview's checks still ran


def test_the_summary_line_for_one_dataset_a_set_budget_over_it_and_the_cache_off(tmp_path):
    csv_path = str(tmp_path / "train.csv")
    one = {"training": CacheNeed(3_000_000_000, 1_000), "validation": None}  # validation: no images
    paths = {"training": csv_path, "validation": csv_path}
    assert budget_summary(one, paths, 5.0, True) == ("Decoded: training 1,000 images 3 GB; budget 5 GB: fits: cached.",
                                                     False)
    assert budget_summary(one, paths, 2.0, True) == (
        "Decoded: training 1,000 images 3 GB; budget 2 GB: over: only the index is cached, images decoded per batch.",
        True)
    assert budget_summary(one, paths, 2.0, False)[0].startswith("The cache is off")
    assert budget_summary({"training": None, "validation": None}, paths, 2.0, True) == \
        ("No image dataset loaded yet.", False)
    assert [size_text(n) for n in (0, 999, 1000, 92_288, 193e9, 1_234_567e9)] == \
        ["0 bytes", "999 bytes", "1 kB", "92.3 kB", "193 GB", "1,235 TB"]
