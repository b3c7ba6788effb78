"""The Likelihood and ROC / PR widgets on their own (no engine run): binary classifiers, many classes, parsing."""
from __future__ import annotations

import numpy as np
import pytest

from nnconsole.app.evaluation.curves import MAX_CURVES, LikelihoodView, RocPrView, class_arrays
from nnconsole.app.evaluation.report import headline
from nnconsole.engine.metrics.curves import roc_auc

pytestmark = pytest.mark.gui


def _legend_names(plot):
    return [item.name() for item in plot.getPlotItem().listDataItems()]


def test_a_binary_classifier_shows_its_positive_class_first(qtbot):
    view = RocPrView()
    qtbot.addWidget(view)
    p1 = np.array([0.9, 0.2, 0.7, 0.4, 0.6, 0.1])
    labels = np.array([1, 0, 1, 1, 0, 0])
    view.set_data(np.stack([1 - p1, p1], axis=1), labels)
    assert view.class_combo.count() == 2 and view.shown_classes() == [1]
    assert "binary" in view.class_combo.currentText()
    assert f"class 1: AUC {roc_auc(p1, labels == 1):.3f}" in _legend_names(view.roc)
    view.clear()
    assert view.class_combo.count() == 0 and view.shown_classes() == [] and _legend_names(view.roc) == []


def test_many_classes_draw_the_first_ten_or_one(qtbot):
    view = RocPrView()
    qtbot.addWidget(view)
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(12), size=50)
    labels = np.arange(50) % 12
    view.set_data(probs, labels)
    assert view.class_combo.itemText(0) == f"every class (first {MAX_CURVES})"
    assert view.shown_classes() == list(range(MAX_CURVES))
    assert len(_legend_names(view.pr)) == MAX_CURVES
    view.class_combo.setCurrentIndex(12)  # class 11 against the rest
    assert view.shown_classes() == [11] and len(_legend_names(view.pr)) == 1


def test_class_arrays_reads_probabilities_in_class_order():
    rows = [{"label": "1", **{f"p_{c}": str(c / 100) for c in range(11)}}]
    probs, labels = class_arrays(rows)
    assert probs[0].tolist() == [c / 100 for c in range(11)]  # p_10 after p_9, not after p_1
    assert labels.tolist() == [1]
    assert class_arrays([])[0].shape == (0, 0)


def test_likelihood_view_clears_and_the_headline_names_another_dataset(qtbot):
    view = LikelihoodView()
    qtbot.addWidget(view)
    view.set_data(np.array([[0.8, 0.2], [0.3, 0.7]]), np.array([0, 0]))
    assert "top-1 <b>50.00%</b>" in view.top_n.text() and "top-2 <b>100.00%</b>" in view.top_n.text()
    view.clear()
    shown, _ = view.accuracy.getData()
    assert view.top_n.text() == "" and (shown is None or len(shown) == 0)
    metrics = {"task": "classification", "count": 2, "accuracy": 0.5, "num_classes": 2, "macro_precision": 0.5,
               "macro_recall": 0.5, "macro_f_measure": 0.5, "split": "dataset", "dataset": "/d/a<b>&c.csv"}
    text = headline(metrics)
    assert "samples of a&lt;b&gt;&amp;c.csv" in text and "validation" not in text


def test_class_names_show_beside_the_numbers(qtbot):
    from nnconsole.app.evaluation.report import PerClassTable

    view = RocPrView()
    qtbot.addWidget(view)
    probs = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6], [0.5, 0.4, 0.1]])
    view.set_data(probs, np.array([0, 1, 2, 1]), ["cat", "<dog>", ""])
    assert [view.class_combo.itemText(i) for i in range(4)] == ["every class", "0 cat vs. the rest",
                                                                 "1 <dog> vs. the rest", "2 vs. the rest"]
    assert any(name.startswith("class 1 &lt;dog&gt;: AUC") for name in _legend_names(view.roc))  # legends read HTML
    table = PerClassTable()
    qtbot.addWidget(table)
    per_class = [{"class": c, "precision": 1.0, "recall": 1.0, "f_measure": 1.0, "support": 1} for c in range(3)]
    table.set_metrics({"per_class": per_class, "macro_precision": 1.0, "macro_recall": 1.0, "macro_f_measure": 1.0,
                       "count": 3, "class_names": ["cat", "<dog>", ""]})
    assert [table.item(r, 0).text() for r in range(3)] == ["0 cat", "1 <dog>", "2"]
    assert table.value("1", "Support") == "1"
