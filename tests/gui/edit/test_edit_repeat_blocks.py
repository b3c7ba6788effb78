"""The EDIT tab shows a repeat block as a block: a frame around its layers labelled with its count, the
parameters of every repetition and its output shape; Times is edited in the RepeatStart's form (issue 17)."""
from __future__ import annotations

import pytest

from tests.gui.support import type_into
pytestmark = pytest.mark.gui


@pytest.fixture
def blocks_page(qtbot, tmp_path):
    from nnconsole.app.document.project_document import ProjectDocument
    from nnconsole.app.edit.page import EditPage
    from tests.support.networks import resnet_like
    from tests.support.projects import blocks_project

    document = ProjectDocument()
    document.load(blocks_project(tmp_path, resnet_like()))
    page = EditPage(document, None)
    page.resize(1200, 900)
    qtbot.addWidget(page)
    page.show()
    return page


def _texts(page):
    return {start: label.text() for start, label in page.scene.repeat_frames.labels.items()}


def test_each_block_is_framed_and_labelled_with_count_parameters_and_shape(blocks_page, tmp_path):
    page = blocks_page
    conv = 4 * 4 * 9 + 4
    # every repetition's weights: the nested block's layers run 2 x 3 times
    assert _texts(page) == {"res": f"x2 · {2 * conv} params · out 4×4×4",
                            "outer": f"x2 · {6 * conv} params · out 4×4×4",
                            "inner": f"x3 · {6 * conv} params · out 4×4×4"}
    frames = page.scene.repeat_frames.frames
    for start, members in (("res", ["res", "c1", "r1", "add", "res end"]), ("inner", ["inner", "c2", "inner end"])):
        for name in members:
            assert frames[start].rect().contains(page.scene.node(name).sceneBoundingRect()), (start, name)
    assert not frames["res"].rect().contains(page.scene.node("stem").sceneBoundingRect())
    assert frames["outer"].rect().contains(frames["inner"].rect())  # the nested block lies inside
    assert frames["inner"].zValue() > frames["outer"].zValue() and frames["outer"].zValue() < page.scene.node("t").zValue()
    page.view.fit()
    page.grab().save(str(tmp_path / "repeat_blocks.png"))


def test_times_is_edited_in_the_form_and_updates_the_counts(blocks_page):
    page = blocks_page
    before = page.info.total_params
    page.select_layers(["res"])
    type_into(page, "param_times", "4")
    page.flush()
    network = page.document.project.network
    assert network.layer("res").params["times"] == 4
    conv = 4 * 4 * 9 + 4
    assert page.info.total_params == before + 2 * conv
    assert _texts(page)["res"].startswith(f"x4 · {4 * conv} params")
    type_into(page, "param_times", "0")  # refused: a block repeats at least once
    assert network.layer("res").params["times"] == 4
    page.document.undo_stack.undo()
    page.flush()
    assert _texts(page)["res"].startswith("x2 ")


def test_an_unclosed_block_is_an_issue_on_its_layer(blocks_page):
    page = blocks_page
    page.select_layers(["res end"])
    page.delete_selected()
    page.flush()
    assert "res" not in _texts(page)
    assert any(name == "res" and "never closed" in text for name, text in page.info.errors)
