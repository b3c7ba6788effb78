"""EDIT tab with a recurrent network (issue 17): a Delay's loop-back connection is allowed (it reads the
previous time step, so it closes no cycle), any other loop is still refused, and the canvas shows the
per-step shapes of the sine_rnn template."""
from __future__ import annotations

import shutil

import pytest

from nnconsole.templates import template_path

pytestmark = pytest.mark.slow  # an EDIT page on a template copy: about 3 s each, measured


@pytest.fixture
def rnn_page(qtbot, tmp_path):
    from nnconsole.app.document.project_document import ProjectDocument
    from nnconsole.app.edit.page import EditPage

    shutil.copytree(template_path("sine_rnn"), tmp_path / "sine_rnn")
    document = ProjectDocument()
    document.load(str(tmp_path / "sine_rnn" / "project.yaml"))
    page = EditPage(document, None)
    page.resize(1200, 900)
    qtbot.addWidget(page)
    page.show()
    return page


def test_a_delay_closes_its_loop_but_other_loops_are_refused(rnn_page):
    page = rnn_page
    messages = []
    page.editor.message_posted.connect(messages.append)
    delay = page.editor.add_layer("Delay")
    assert page.editor.connect_layers(delay, "cat")  # the previous step's value joins the input
    assert page.editor.connect_layers("h", delay)  # h -> Delay -> cat -> fc -> h: one step later
    assert page.document.project.network.layer(delay).inputs == ["h"] and not messages
    assert not page.editor.connect_layers("h", "cat")  # within one step: a real cycle
    assert "would make a cycle" in messages[-1]


def test_the_canvas_shows_per_step_shapes(rnn_page, tmp_path):
    from nnconsole.engine.network.shapes import infer_network

    info = infer_network(rnn_page.document.project.network)
    assert info.errors == [] and info.layers["fc"].out_shape == (16,) and info.layers["sequence"].out_shape == (16, 16)
    rnn_page.grab().save(str(tmp_path / "edit_rnn.png"))
