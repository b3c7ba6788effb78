"""EVALUATION tab, Inference view: ``nnconsole infer`` in a QProcess on a tiny image classifier, the results
table with thumbnails and a larger view on click, new files each time, Save CSV, failures shown, drops."""
from __future__ import annotations

import os

import pytest
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent
from PySide6.QtWidgets import QApplication

from nnconsole.app.document.project_document import ProjectDocument
from nnconsole.app.evaluation.page import create_page
from nnconsole.engine.evaluate.inference import infer
from tests.support.datasets import write_images
from tests.support.runs import make_image_run

pytestmark = pytest.mark.gui


@pytest.fixture
def page_with_run(qtbot, tmp_path):
    run_dir, w, b = make_image_run(tmp_path, names=["cat", "dog", "bird"])
    document = ProjectDocument()
    document.load(str(tmp_path / "tiny.yaml"))
    page = create_page(document, None)
    qtbot.addWidget(page)
    page.resize(1300, 800)
    page.show()
    assert page.show_run(run_dir, "inference")
    return page, run_dir


def _infer(qtbot, panel):
    with qtbot.waitSignal(panel.inference_loaded, timeout=120_000):
        assert panel.infer()


@pytest.mark.slow  # nnconsole infer in a QProcess
def test_inference_of_a_folder_shows_the_cli_numbers_with_thumbnails_and_saves_them(qtbot, tmp_path, page_with_run):
    page, run_dir = page_with_run
    panel = page.inference
    assert page.views.currentWidget() is panel and page.selected_run() == run_dir
    assert not panel.infer_button.isEnabled()  # no data yet
    paths, _ = write_images(tmp_path / "photos", count=6)
    panel.set_data([str(tmp_path / "photos")])
    assert panel.infer_button.isEnabled() and "photos" in panel.data_label.text()
    _infer(qtbot, panel)
    first = panel.results
    assert os.path.dirname(first) == os.path.join(run_dir, "inference")
    expected = tmp_path / "expected.csv"
    infer(run_dir, [str(tmp_path / "photos")], output=str(expected))  # the engine in this process
    assert open(first).read() == expected.read_text()
    model = panel.model
    assert model.rowCount() == 6 and panel.progress.isHidden()
    assert model.headers[:6] == ["#", "Sample", "Prediction", "Class name", "Confidence", "Top classes"]
    row = model.rows[0]
    assert row["top_classes"].startswith(f"{row['top1_name']} (")
    assert row["prediction_name"] == ["cat", "dog", "bird"][int(row["prediction"])]
    pixmap = model.data(model.index(0, 1), Qt.DecorationRole)
    assert pixmap is not None and not pixmap.isNull()
    assert model.data(model.index(0, 1)) == os.path.basename(paths[0])

    # again: a new file, the first one kept
    _infer(qtbot, panel)
    assert panel.results != first and panel.results.endswith("-2.csv") and os.path.isfile(first)

    saved = tmp_path / "mine" / "saved.csv"
    saved.parent.mkdir()
    assert panel.save_as(str(saved))
    assert saved.read_text() == open(panel.results).read()
    assert not [n for n in os.listdir(saved.parent) if n.endswith(".tmp")]
    page.grab().save(str(tmp_path / "inference.png"))


@pytest.mark.slow  # nnconsole infer in a QProcess
def test_a_wrong_image_size_is_shown_and_resize_fixes_it(qtbot, tmp_path, page_with_run):
    page, run_dir = page_with_run
    panel = page.inference
    paths, _ = write_images(tmp_path / "big", count=2, size=(8, 10))
    panel.set_data(paths)
    with qtbot.waitSignal(panel.inference_failed, timeout=120_000) as failed:
        assert panel.infer()
    assert "8x10 (HxW)" in failed.args[0] and "fit the images" in failed.args[0]  # the GUI is told of its box, not a CLI flag
    assert panel.error.isVisible() and "Traceback" not in panel.error.text()
    assert panel.results is None and panel.model.rowCount() == 0
    folder = os.path.join(run_dir, "inference")
    assert not os.path.isdir(folder) or not os.listdir(folder)  # a refused inference leaves no file
    assert not panel.resize_mode.isEnabled()
    panel.resize_box.setChecked(True)
    panel.resize_mode.setCurrentIndex(panel.resize_mode.findData("padding"))
    _infer(qtbot, panel)
    assert panel.model.rowCount() == 2 and panel.error.isHidden()
    expected = tmp_path / "padded.csv"
    infer(run_dir, paths, output=str(expected), resize="padding")
    assert open(panel.results).read() == expected.read_text()


def test_files_dropped_on_the_view_become_its_data(qtbot, tmp_path, page_with_run):
    page, _ = page_with_run
    panel = page.inference
    paths, _ = write_images(tmp_path / "drop", count=2)
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(p) for p in paths])
    event = QDropEvent(QPointF(10, 10), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    panel.dropEvent(event)
    assert panel.data == paths and panel.infer_button.isEnabled()


@pytest.mark.slow  # nnconsole infer in a QProcess
def test_clicking_a_thumbnail_opens_a_larger_view(qtbot, tmp_path, page_with_run):
    page, _ = page_with_run
    panel = page.inference
    write_images(tmp_path / "photos", count=2)
    panel.set_data([str(tmp_path / "photos")])
    _infer(qtbot, panel)
    index = panel.sorter.index(0, 1)
    panel._clicked(index)
    popups = [w for w in QApplication.topLevelWidgets() if w.objectName() == "image_popup" and w.isVisible()]
    assert len(popups) == 1
    pixmap = popups[0].image.pixmap()
    assert pixmap.width() > 200 and pixmap.height() > 150  # a 4x5 image enlarged to 256 wide, not a 32 px thumbnail
    popups[0].close()
    panel._clicked(panel.sorter.index(0, 2))  # not the sample column: nothing opens
    assert not [w for w in QApplication.topLevelWidgets() if w.objectName() == "image_popup" and w.isVisible()]


@pytest.mark.slow  # nnconsole infer in a QProcess
def test_another_run_or_model_clears_the_results(qtbot, tmp_path, page_with_run):
    page, _ = page_with_run
    panel = page.inference
    write_images(tmp_path / "photos", count=2)
    panel.set_data([str(tmp_path / "photos")])
    _infer(qtbot, panel)
    page.model_combo.setCurrentText("final")
    assert panel.model.rowCount() == 0 and panel.results is None and not panel.save_button.isEnabled()


def _drop(widget, paths):
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    event = QDropEvent(QPointF(10, 10), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    widget.dropEvent(event)
    return event.isAccepted()


def test_images_dropped_on_the_main_window_open_the_inference_view(qtbot, tmp_path, make_window):
    run_dir, _, _ = make_image_run(tmp_path)
    window = make_window(tab_keys=("edit", "evaluation"))
    window.document.load(str(tmp_path / "tiny.yaml"))
    window.show_tab("edit")
    page = window.pages["evaluation"]
    paths, _ = write_images(tmp_path / "photos", count=2)
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "data.csv").write_text("x:image\nphotos/im00.png\n")
    assert not _drop(window, [tmp_path / "notes.txt"])  # not inferable: nothing happens
    assert not _drop(window, [tmp_path / "data.csv"])  # a CSV only on the EVALUATION tab (DATASET reads CSVs too)
    assert window.tabs.currentWidget() is window.pages["edit"]
    assert _drop(window, [tmp_path / "photos"])
    assert window.tabs.currentWidget() is page and page.views.currentWidget() is page.inference
    assert page.inference.data == [str(tmp_path / "photos")]
    assert _drop(window, [tmp_path / "data.csv"])  # now on the EVALUATION tab
    assert page.inference.data == [str(tmp_path / "data.csv")]


@pytest.mark.slow  # nnconsole infer in a QProcess
def test_inference_imports_no_code_from_the_run_or_data_folders(qtbot, tmp_path, page_with_run):
    """The CLI runs with the run folder as its working folder: a numpy.py or PIL.py there must never be imported."""
    page, run_dir = page_with_run
    marker = tmp_path / "imported"
    paths, _ = write_images(tmp_path / "photos", count=2)
    for folder in (run_dir, str(tmp_path / "photos")):
        for name in ("numpy.py", "PIL.py", "nnabla.py"):
            with open(os.path.join(folder, name), "w") as fh:
                fh.write(f"open({str(marker)!r}, 'a').write({name!r})\nraise SystemExit(99)\n")
    page.inference.set_data([str(tmp_path / "photos")])
    _infer(qtbot, page.inference)
    assert page.inference.model.rowCount() == 2 and not marker.exists()


def test_stop_ends_a_running_inference_and_shows_no_results(qtbot, tmp_path, page_with_run, monkeypatch):
    """Stop sends SIGTERM to the command (the CLI's side: tests/test_infer.py, stopped inference); here a stand-in
    that announces one progress event (in the --events file, its last argument) and waits, so the test does not race
    a real inference. Its terminal line says something else: the bar follows the events, not the text."""
    import nnconsole.app.bridge.engine_process as engine_process

    script = ("for last; do :; done; echo '{\"event\": \"infer_progress\", \"done\": 1, \"total\": 10}' >> \"$last\"; "
              "echo 'inferred 7/10 samples'; exec sleep 60")
    monkeypatch.setattr(engine_process, "engine_program", lambda: ("/bin/sh", ["-c", script, "sh"]))
    page, _ = page_with_run
    panel = page.inference
    write_images(tmp_path / "photos", count=1)
    panel.set_data([str(tmp_path / "photos")])
    assert not panel.stop_button.isEnabled() and not panel.stop()
    with qtbot.waitSignal(panel.command.event_received, timeout=30_000) as received:
        assert panel.infer()
    assert received.args == [{"event": "infer_progress", "done": 1, "total": 10}]
    qtbot.waitUntil(lambda: panel.progress.value() == 1)
    qtbot.wait(300)  # the terminal line has come by now too
    assert panel.progress.value() == 1 and "inferred 7/10 samples" in panel.command._stdout
    assert panel.progress.maximum() == 10 and panel.stop_button.isEnabled() and not panel.infer_button.isEnabled()
    with qtbot.waitSignal(panel.inference_failed, timeout=30_000) as failed:
        assert panel.stop()
    assert failed.args == ["stopped"] and panel.state.text() == "Stopped: no results written."
    assert panel.error.isHidden() and panel.results is None and panel.infer_button.isEnabled()
    assert not panel.stop_button.isEnabled()
