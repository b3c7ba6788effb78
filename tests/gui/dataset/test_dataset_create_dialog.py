"""DATASET tab: "Create dataset..." runs ``nnconsole dataset create`` in a subprocess with progress and Cancel,
and the CSVs it made become the project's datasets (one undo step)."""
from __future__ import annotations

import os

import numpy as np
import pytest
from PIL import Image

from tests.gui.support import wait_until

from nnconsole.app.dataset.create_dialog import CreateDatasetDialog
from nnconsole.app.dataset.page import create_page

from tests.support.datasets import make_source  # the same generated folder as the CLI tests

pytestmark = pytest.mark.gui


def test_create_from_the_dataset_tab_sets_the_project_datasets(qtbot, digits_document, tmp_path):
    page = create_page(digits_document, None)
    qtbot.addWidget(page)
    page.show()
    make_source(tmp_path / "src", classes=("zero", "one"))
    from PySide6.QtWidgets import QPushButton

    page.findChild(QPushButton, "dataset_create").click()
    dialog = page.create_dialog
    assert isinstance(dialog, CreateDatasetDialog) and dialog.isVisible()
    # the size and channels come from the network's image Input (digits: 1 x 8 x 8)
    assert (dialog.width_box.value(), dialog.height_box.value(), dialog.channels.currentData()) == (8, 8, 1)
    dialog.source.setText(str(tmp_path / "src"))
    project_folder = os.path.dirname(digits_document.project.path)
    assert dialog.output.text() == os.path.join(project_folder, "data", "src_8x8")  # suggested
    dialog.ratio2.setValue(25)
    dialog.create_button.click()
    assert dialog.is_running() and not dialog.create_button.isEnabled()
    wait_until(qtbot, lambda: not dialog.is_running(), 60)
    assert dialog.status.text().startswith("Created train.csv, test.csv"), dialog.status.text()
    assert "broken.png" in dialog.log.toPlainText()  # the unreadable image is listed
    assert dialog.progress.value() == dialog.progress.maximum()
    project = digits_document.project
    assert project.datasets.training == os.path.join("data", "src_8x8", "train.csv")
    assert project.datasets.validation == os.path.join("data", "src_8x8", "test.csv")
    page.wait_for_checks()
    wait_until(qtbot, lambda: all(s.loaded is not None or s.error for s in page.states.values()), 30)
    assert page.states["training"].loaded == {"x": (1, 8, 8), "y": (1,)}, page.states["training"].error
    page.resize(1200, 800)
    dialog.grab().save(str(tmp_path / "create_dialog.png"))
    if os.environ.get("NNCONSOLE_SCREENSHOTS"):
        dialog.grab().save(os.path.join(os.environ["NNCONSOLE_SCREENSHOTS"], "create_dialog.png"))
        page.grab().save(os.path.join(os.environ["NNCONSOLE_SCREENSHOTS"], "dataset_page.png"))
    digits_document.undo_stack.undo()  # one undo step takes both paths back
    assert project.datasets.training == os.path.join("data", "train.csv")


@pytest.mark.slow
def test_cancel_stops_the_command_and_writes_nothing(qtbot, tmp_path):
    source = tmp_path / "src" / "only"
    source.mkdir(parents=True)
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (64, 64, 3), dtype=np.uint8)).save(source / "0.png")
    data = (source / "0.png").read_bytes()
    for i in range(1, 400):
        (source / f"{i}.png").write_bytes(data)
    dialog = CreateDatasetDialog(None, str(tmp_path), (3, 512, 512))
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.source.setText(str(tmp_path / "src"))
    dialog.output.setText(str(tmp_path / "out"))
    dialog.create_button.click()
    wait_until(qtbot, lambda: dialog.progress.maximum() == 400 and dialog.progress.value() > 0, 60)
    assert dialog.close_button.text() == "Cancel" and "ETA" in dialog.status.text()
    if os.environ.get("NNCONSOLE_SCREENSHOTS"):
        dialog.grab().save(os.path.join(os.environ["NNCONSOLE_SCREENSHOTS"], "create_running.png"))
    dialog.close_button.click()
    wait_until(qtbot, lambda: not dialog.is_running(), 30)
    assert "Cancelled" in dialog.status.text()
    assert sorted(os.listdir(tmp_path)) == ["src"]  # no output folder and no staging folder left
    assert dialog.isVisible()  # Cancel stopped the command; the dialog stays to try again


def test_pickers_fill_the_fields_and_the_arguments_are_the_cli_options(qtbot, monkeypatch, tmp_path):
    from nnconsole.app.dataset import create_dialog

    asked = []
    monkeypatch.setattr(create_dialog, "choose_source",
                        lambda parent, start, csv: asked.append(csv) or str(tmp_path / ("list.csv" if csv else "x")))
    monkeypatch.setattr(create_dialog, "choose_output", lambda parent, start: str(tmp_path / "made"))
    dialog = CreateDatasetDialog(None, str(tmp_path), (1, 28, 28))
    qtbot.addWidget(dialog)
    csv_button = next(b for b in dialog.pick_buttons if b.text() == "CSV...")
    csv_button.click()
    assert asked == [True] and dialog.source.text() == str(tmp_path / "list.csv")
    assert dialog.output.text() == os.path.join(str(tmp_path), "data", "list_28x28")  # suggested from the CSV
    dialog.pick_buttons[2].click()  # Browse... for the output: the user's choice stays
    dialog.source.setText(str(tmp_path / "other"))
    assert dialog.output.text() == str(tmp_path / "made")
    dialog.mode.setCurrentIndex(dialog.mode.findData("padding"))
    dialog.shuffle.setChecked(False)
    dialog.ratio2.setValue(0)  # no second file
    dialog.skip_bad.setChecked(False)
    assert dialog.arguments() == ["dataset", "create", "-i", str(tmp_path / "other"), "-o", str(tmp_path / "made"),
                                  "-w", "28", "-g", "28", "-c", "1", "-m", "padding", "-s", "false", "--seed", "0",
                                  "-f1", "train.csv", "--on-error", "stop"]
