"""A GUI save changes only what the user changed (issue 28 item 3): the template's header comment, the
user's own comments, block and flow styles and left-out defaults all survive an edit made through the
document's undo commands; the text differs exactly on the edited lines."""
from __future__ import annotations

import difflib

import pytest

from nnconsole.app.config.commands import set_setting
from nnconsole.app.document.commands import SetParamCommand
from nnconsole.app.document.project_document import ProjectDocument
from nnconsole.engine.project.codec import project_to_dict
from nnconsole.engine.project.io import load_project

pytestmark = pytest.mark.gui


def hand_comment(path: str) -> str:
    """What a user does in a text editor: a comment of their own above datasets and one after a value."""
    text = open(path).read()
    text = text.replace("datasets:\n", "# CSVs made by scripts/make_csv.py\ndatasets:\n", 1)
    text = text.replace("  batch_size: 32\n", "  batch_size: 32  # 64 did not fit\n", 1)
    with open(path, "w") as fh:
        fh.write(text)
    return text


def changed(before: str, after: str):
    return [line for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def test_edits_through_the_document_change_only_their_lines(template_project):
    before = hand_comment(template_project)
    document = ProjectDocument()
    document.load(template_project)
    set_setting(document, "config.batch_size", 16)
    conv = next(layer for layer in document.project.network.layers if layer.params.get("outmaps") == 16)
    document.undo_stack.push(SetParamCommand(document, conv.name, "outmaps", 24))
    document.save()
    after = open(template_project).read()
    assert after.startswith("# nnconsole project template: digits_cnn.")
    assert "# CSVs made by scripts/make_csv.py\ndatasets:\n" in after
    lines = changed(before, after)
    assert lines == [
        "-      params: {outmaps: 16, kernel: [3, 3], pad: [1, 1], stride: [1, 1]}",
        "+      params: {outmaps: 24, kernel: [3, 3], pad: [1, 1], stride: [1, 1]}",
        "-  batch_size: 32  # 64 did not fit",
        "+  batch_size: 16  # 64 did not fit",
    ], lines
    assert project_to_dict(load_project(template_project)) == project_to_dict(document.project)


def test_undo_back_to_the_file_saves_the_same_text(template_project):
    before = hand_comment(template_project)
    document = ProjectDocument()
    document.load(template_project)
    set_setting(document, "config.max_epoch", 99)
    document.undo_stack.undo()
    set_setting(document, "optimizer.learning_rate", 0.5)
    document.undo_stack.undo()
    document.save()
    assert open(template_project).read() == before
