"""Likelihood graph, ROC/PR curves with AUC/AP and top-N accuracy against hand computations and independent formulas,
and ``nnconsole evaluate --dataset`` on a CSV other than the validation set."""
from __future__ import annotations

import itertools
import json
import os

import numpy as np
import pytest

from nnconsole.engine.cli.main import main as cli_main
from nnconsole.engine.evaluate.evaluation import evaluate_run
from nnconsole.engine.metrics.results import evaluation_dir, write_evaluation
from nnconsole.engine.metrics.curves import (area, average_precision, curve_metrics, likelihood_graph, pr_curve,
                                             roc_auc, roc_curve, top_n_accuracy)

# scikit-learn's documentation example: roc_auc_score 0.75, average_precision_score 0.8333...
SCORES = [0.1, 0.4, 0.35, 0.8]
TRUTH = [0, 0, 1, 1]


def test_roc_curve_and_auc_of_a_known_case():
    fpr, tpr, thresholds = roc_curve(SCORES, TRUTH)
    assert fpr.tolist() == [0.0, 0.0, 0.5, 0.5, 1.0]
    assert tpr.tolist() == [0.0, 0.5, 0.5, 1.0, 1.0]
    assert thresholds[1:].tolist() == [0.8, 0.4, 0.35, 0.1]
    assert roc_auc(SCORES, TRUTH) == pytest.approx(0.75)


def test_pr_curve_and_average_precision_of_a_known_case():
    recall, precision, _ = pr_curve(SCORES, TRUTH)
    assert recall.tolist() == [0.0, 0.5, 0.5, 1.0, 1.0]
    np.testing.assert_allclose(precision, [1.0, 1.0, 0.5, 2 / 3, 0.5])
    assert average_precision(SCORES, TRUTH) == pytest.approx(0.5 * 1.0 + 0.5 * 2 / 3)


def _mann_whitney_auc(scores, positives):
    """P(score of a positive > score of a negative) + half the ties: the ROC AUC, counted pair by pair."""
    pos = [s for s, p in zip(scores, positives) if p]
    neg = [s for s, p in zip(scores, positives) if not p]
    wins = sum(1.0 if a > b else 0.5 if a == b else 0.0 for a, b in itertools.product(pos, neg))
    return wins / (len(pos) * len(neg))


def _precision_at_each_positive(scores, positives):
    """AP without ties: the mean over positives of the precision among the samples ranked at or above it."""
    order = np.argsort(-np.asarray(scores), kind="stable")
    hits, total = 0, []
    for rank, i in enumerate(order, start=1):
        if positives[i]:
            hits += 1
            total.append(hits / rank)
    return float(np.mean(total))


def test_auc_and_ap_agree_with_independent_formulas_on_random_scores_with_ties():
    rng = np.random.default_rng(3)
    for trial in range(20):
        n = int(rng.integers(5, 60))
        positives = rng.random(n) < 0.4
        positives[0], positives[1] = True, False  # both sides present
        tied = np.round(rng.random(n), 1)  # many ties
        assert roc_auc(tied, positives) == pytest.approx(_mann_whitney_auc(tied, positives))
        distinct = rng.permutation(n) / n  # no ties: the per-positive precision formula applies
        assert average_precision(distinct, positives) == pytest.approx(_precision_at_each_positive(distinct, positives))
        fpr, tpr, _ = roc_curve(tied, positives)
        assert fpr[0] == tpr[0] == 0.0 and fpr[-1] == tpr[-1] == 1.0
        assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0)


def test_undefined_areas_are_none_not_a_division_by_zero():
    assert roc_auc([0.2, 0.9], [1, 1]) is None and roc_auc([0.2, 0.9], [0, 0]) is None
    assert average_precision([0.2, 0.9], [0, 0]) is None
    assert area([0.0], [1.0]) == 0.0


def test_top_n_accuracy_by_hand():
    probs = [[0.5, 0.3, 0.2], [0.1, 0.2, 0.7], [0.3, 0.3, 0.4], [0.6, 0.1, 0.3]]
    labels = [1, 2, 1, 1]
    assert top_n_accuracy(probs, labels, 1) == pytest.approx(1 / 4)  # only the second sample
    # + the first; not the third: its tie 0.3/0.3 puts class 0 before class 1; not the last: class 1 is third
    assert top_n_accuracy(probs, labels, 2) == pytest.approx(2 / 4)
    assert top_n_accuracy(probs, labels, 3) == pytest.approx(1.0)
    assert top_n_accuracy(np.zeros((0, 3)), [], 2) == 0.0


def test_likelihood_graph_by_hand():
    probs = [[0.9, 0.1], [0.2, 0.8], [0.55, 0.45], [0.4, 0.6], [0.97, 0.03]]
    labels = [0, 0, 1, 1, 0]  # confidences 0.9 0.8 0.55 0.6 0.97; correct: yes no no yes yes
    points = {p["threshold"]: p for p in likelihood_graph(probs, labels, thresholds=[0.0, 0.6, 0.85, 0.99])}
    assert points[0.0]["coverage"] == 1.0 and points[0.0]["accuracy"] == pytest.approx(3 / 5)
    assert points[0.6]["count"] == 4 and points[0.6]["accuracy"] == pytest.approx(3 / 4)  # 0.6 counts (>=)
    assert points[0.85]["coverage"] == pytest.approx(2 / 5) and points[0.85]["accuracy"] == 1.0
    assert points[0.99] == {"threshold": 0.99, "coverage": 0.0, "accuracy": None, "count": 0}


def test_curve_metrics_per_class_one_vs_rest():
    probs = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6], [0.5, 0.4, 0.1]])
    labels = np.array([0, 1, 2, 1])
    m = curve_metrics(probs, labels)
    for c in range(3):
        assert m["roc_auc"][c] == pytest.approx(_mann_whitney_auc(probs[:, c], labels == c))
    assert m["macro_roc_auc"] == pytest.approx(np.mean(m["roc_auc"]))
    assert m["top_n_accuracy"] == {"1": 0.75, "2": 1.0, "3": 1.0}
    assert len(m["likelihood"]) == 20


# ---------------------------------------------------------------------------------------------- evaluate --dataset

def test_evaluate_on_another_dataset_csv_writes_beside_the_validation_evaluation(tmp_path, capsys, monkeypatch):
    from tests.support.runs import LABELS, W, B, X, tiny_run

    run_dir = tiny_run(tmp_path)
    other = tmp_path / "elsewhere" / "test.csv"
    other.parent.mkdir()
    x = X[::-1] * 0.5
    labels = LABELS[::-1]
    other.write_text("x__0,x__1,y\n" + "".join(f"{a},{b},{c}\n" for (a, b), c in zip(x, labels)))
    result = evaluate_run(run_dir, "best", dataset=str(other))
    logits = x @ W + B
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(result.outputs, probs, rtol=1e-5, atol=1e-6)
    m = result.metrics
    assert m["split"] == "dataset" and m["dataset"] == str(other) and m["count"] == len(x)
    assert m["accuracy"] == pytest.approx(np.mean(probs.argmax(axis=1) == labels))
    assert m["roc_auc"][0] == pytest.approx(_mann_whitney_auc(probs[:, 0], labels == 0))
    folder = write_evaluation(result)
    assert folder == evaluation_dir(run_dir, "best", str(other)) != evaluation_dir(run_dir, "best")
    assert os.path.basename(folder).startswith("best-test-")
    assert not os.path.exists(evaluation_dir(run_dir, "best"))  # the validation evaluation is not replaced

    monkeypatch.chdir(tmp_path)  # a relative --dataset from another working folder
    assert cli_main(["evaluate", run_dir, "--dataset", os.path.join("elsewhere", "test.csv")]) == 0
    out = capsys.readouterr().out
    assert "samples of test.csv" in out and "top-2" in out and "macro ROC AUC" in out
    with open(os.path.join(folder, "metrics.json")) as fh:
        assert json.load(fh)["dataset"] == str(other)
    assert cli_main(["evaluate", run_dir, "--dataset", "missing.csv"]) == 2
    assert "missing.csv: no such dataset CSV" in capsys.readouterr().err


def test_evaluate_keeps_class_names_from_labels_txt(tmp_path):
    from tests.support.runs import tiny_run

    run_dir = tiny_run(tmp_path)
    assert "class_names" not in evaluate_run(run_dir, "best").metrics  # no labels.txt: numbers only
    (tmp_path / "data" / "labels.txt").write_text("setosa\nversicolor\nvirginica\nextra\n")
    assert evaluate_run(run_dir, "best").metrics["class_names"] == ["setosa", "versicolor", "virginica"]
