"""Inference and evaluation errors shown as the engine wrote them, and wrong-size images skipped and listed
(issue 28 item 5): "network&#x27;s input" came from HTML-escaped text in a label Qt took for plain text."""
from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from nnconsole.app.document.project_document import ProjectDocument
from nnconsole.app.evaluation.page import create_page
from tests.support.datasets import write_images
from tests.support.runs import make_image_run

pytestmark = pytest.mark.gui
SHOTS = "/work/shots/shell"
ENGINE_SAYS = ("nnconsole infer: /data/odd.png: the image is 8x10 (HxW) but the network's input 'x' takes 4x5; "
               "fit the images to the input size (stretch, trim or pad them) or skip the images of another size\n")


@pytest.fixture
def page_with_run(qtbot, tmp_path):
    run_dir, _w, _b = make_image_run(tmp_path, names=["cat", "dog", "bird"])
    document = ProjectDocument()
    document.load(str(tmp_path / "tiny.yaml"))
    page = create_page(document, None)
    qtbot.addWidget(page)
    page.resize(1300, 700)
    page.show()
    assert page.show_run(run_dir, "inference")
    return page, run_dir


def test_an_engine_message_shows_quotes_and_brackets_as_written(page_with_run):
    page, _run_dir = page_with_run
    panel = page.inference
    panel._finished(2, "", "[nnabla][INFO]: Initializing CPU extension...\n" + ENGINE_SAYS)
    shown = panel.error.text()
    assert "the network's input 'x' takes 4x5" in shown and "&#x27;" not in shown and "[nnabla]" not in shown
    assert panel.error.textFormat() == Qt.PlainText and not panel.error.isHidden()
    panel.grab().save(f"{SHOTS}/inference_error_after.png")
    page.show_error("cannot read <results>: 'x' & 'y'\nsecond line")
    assert page.error.text() == "cannot read <results>: 'x' & 'y'\nsecond line"
    assert page.error.textFormat() == Qt.PlainText


@pytest.mark.slow  # nnconsole infer in a QProcess
def test_skip_other_sizes_infers_the_rest_and_lists_the_skipped(qtbot, tmp_path, page_with_run):
    page, _run_dir = page_with_run
    panel = page.inference
    write_images(tmp_path / "photos", count=3, size=(4, 5))
    big, _ = write_images(tmp_path / "big", count=1, size=(8, 10))
    odd = str(tmp_path / "photos" / "odd.png")
    with open(big[0], "rb") as src, open(odd, "wb") as dst:
        dst.write(src.read())
    panel.set_data([str(tmp_path / "photos")])
    with qtbot.waitSignal(panel.inference_failed, timeout=120_000):  # by default one odd image stops the batch
        assert panel.infer()
    assert "skip the images of another size" in panel.error.text() and "--" not in panel.error.text()
    panel.skip_box.setChecked(True)
    with qtbot.waitSignal(panel.inference_loaded, timeout=120_000):
        assert panel.infer()
    assert panel.model.rowCount() == 3 and panel.error.isHidden()
    assert not panel.skipped_note.isHidden() and odd in panel.skipped_note.text()
    panel.grab().save(f"{SHOTS}/inference_skipped_after.png")
