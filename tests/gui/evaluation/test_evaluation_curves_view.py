"""EVALUATION tab breadth: likelihood graph and top-N, ROC/PR with AUC per class, evaluation on another dataset CSV,
larger thumbnails on click; on a tiny image classifier evaluated through ``nnconsole evaluate`` in a QProcess."""
from __future__ import annotations

import os

import numpy as np
import pytest
from PySide6.QtWidgets import QApplication

from nnconsole.app.document.project_document import ProjectDocument
from nnconsole.app.evaluation.page import create_page
from nnconsole.engine.metrics.curves import likelihood_graph, roc_auc, top_n_accuracy
from nnconsole.engine.metrics.results import evaluation_dir
from tests.support.datasets import write_images
from tests.support.runs import make_image_run
from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.rundir.protocol import RESOLVED_FILE

pytestmark = [pytest.mark.gui, pytest.mark.slow]  # each evaluates through the CLI in a QProcess (2-4 s)


def _dataset(folder, count, seed):
    """A dataset CSV of ``count`` random images with labels 0, 1, 2, 0 ... in ``folder``."""
    paths, _ = write_images(folder / "images", count=count, seed=seed)
    csv_path = folder / "data.csv"
    csv_path.write_text("x:image,y:label\n" + "".join(f"images/{os.path.basename(p)},{i % 3}\n"
                                                      for i, p in enumerate(paths)))
    return str(csv_path)


@pytest.fixture
def evaluated_page(qtbot, tmp_path):
    run_dir, _, _ = make_image_run(tmp_path)
    validation = _dataset(tmp_path / "data", 24, seed=1)
    from nnconsole.engine.project.io import save_project

    resolved = os.path.join(run_dir, RESOLVED_FILE)
    project = load_valid_project(resolved, check_datasets=False)
    project.datasets.validation = validation
    save_project(project, resolved, backup=False)
    document = ProjectDocument()
    document.load(str(tmp_path / "tiny.yaml"))
    page = create_page(document, None)
    qtbot.addWidget(page)
    page.resize(1400, 900)
    page.show()
    assert page.show_run(run_dir)
    with qtbot.waitSignal(page.evaluation_loaded, timeout=120_000):
        assert page.evaluate()
    return page, run_dir


def _probs_labels(page):
    rows = page.samples.rows
    return (np.array([[float(r[f"p_{c}"]) for c in range(3)] for r in rows]),
            np.array([int(r["label"]) for r in rows]))


def test_likelihood_graph_top_n_and_roc_views_show_the_evaluation(qtbot, evaluated_page):
    page, _ = evaluated_page
    probs, labels = _probs_labels(page)
    assert page.class_views.count() == 3
    x, y = page.likelihood.accuracy.getData()
    expected = [p for p in likelihood_graph(probs, labels) if p["accuracy"] is not None]
    np.testing.assert_allclose(x, [p["threshold"] for p in expected])
    np.testing.assert_allclose(y, [p["accuracy"] for p in expected])
    assert y[0] == pytest.approx(page.metrics["accuracy"])  # threshold 0 keeps every sample
    _, coverage = page.likelihood.coverage.getData()
    assert coverage[0] == 1.0 and np.all(np.diff(coverage) <= 0)
    text = page.likelihood.top_n.text()
    for n in (1, 2, 3):
        assert f"top-{n} <b>{top_n_accuracy(probs, labels, n):.2%}</b>" in text
    assert page.metrics["top_n_accuracy"]["2"] == pytest.approx(top_n_accuracy(probs, labels, 2))

    roc = page.roc_pr
    assert roc.class_combo.count() == 4 and roc.shown_classes() == [0, 1, 2]  # every class, then each one
    names = [item.name() for item in roc.roc.getPlotItem().listDataItems()]
    for c in range(3):
        auc = roc_auc(probs[:, c], labels == c)
        assert f"class {c}: AUC {auc:.3f}" in names
        assert page.metrics["roc_auc"][c] == pytest.approx(auc)
    roc.class_combo.setCurrentIndex(2)  # class 1 against the rest
    assert roc.shown_classes() == [1]
    assert len(roc.pr.getPlotItem().listDataItems()) == 1
    assert "macro ROC AUC" in page.summary.text() and "validation samples" in page.summary.text()
    page.class_views.setCurrentIndex(1)
    page.grab().save(os.path.join(os.path.dirname(page.metrics["run_dir"]), "likelihood.png"))


def test_evaluation_on_another_dataset_keeps_the_validation_one(qtbot, tmp_path, evaluated_page):
    page, run_dir = evaluated_page
    validation_accuracy = page.metrics["accuracy"]
    other = _dataset(tmp_path / "other", 9, seed=5)
    page.dataset_choice.set_dataset(other)
    assert page.metrics is None  # not evaluated on it yet
    with qtbot.waitSignal(page.evaluation_loaded, timeout=120_000):
        assert page.evaluate()
    assert page.folder == evaluation_dir(run_dir, "best", other)
    assert page.metrics["count"] == 9 and page.metrics["dataset"] == other
    assert "samples of data.csv" in page.summary.text()
    page.dataset_choice.set_dataset(None)  # back to the validation set: its evaluation is still there
    assert page.metrics["count"] == 24 and page.metrics["accuracy"] == validation_accuracy
    page.dataset_choice.fill(run_dir)  # the evaluated CSV is listed for this run
    assert page.dataset_choice.findData(other) > 0


def test_clicking_a_sample_thumbnail_opens_a_larger_view(qtbot, evaluated_page):
    page, _ = evaluated_page
    page._sample_clicked(page.filter.index(0, 1))
    popups = [w for w in QApplication.topLevelWidgets() if w.objectName() == "image_popup" and w.isVisible()]
    assert len(popups) == 1 and popups[0].image.pixmap().width() > 200
    popups[0].close()
