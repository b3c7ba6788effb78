"""nnconsole.engine.evaluate.evaluation and ``nnconsole evaluate``: metrics against hand computations, files, errors (no Qt)."""
from __future__ import annotations

import csv
import json
import math
import os

import numpy as np
import pytest

from nnconsole.engine.cli.main import main as cli_main
from nnconsole.engine.rundir.protocol import EVALUATE_FINISHED_EVENT, EVALUATE_PROGRESS_EVENT, read_events
from nnconsole.engine.data.loading import DatasetError
from nnconsole.engine.evaluate.evaluation import (EvaluationError, classification_metrics, evaluate_run,
                                                  regression_metrics)
from nnconsole.engine.metrics.results import (confusion_matrix, evaluation_dir, read_evaluation, summary_text,
                                              write_evaluation)
from tests.support.runs import B, LABELS, W, X, tiny_run


# ---------------------------------------------------------------------------------------------- pure metrics

def test_classification_metrics_match_a_hand_computation():
    labels = [0, 0, 1, 1, 2, 2, 2]
    preds = [0, 1, 1, 1, 2, 0, 2]
    m = classification_metrics(labels, preds, 3)
    assert m["confusion_matrix"] == [[1, 1, 0], [0, 2, 0], [1, 0, 2]]
    assert m["count"] == 7
    assert m["accuracy"] == pytest.approx(5 / 7)
    by_class = {c["class"]: c for c in m["per_class"]}
    # class 0: tp 1, predicted 2, actual 2; class 1: tp 2, predicted 3, actual 2; class 2: tp 2, predicted 2, actual 3
    assert by_class[0]["precision"] == pytest.approx(1 / 2) and by_class[0]["recall"] == pytest.approx(1 / 2)
    assert by_class[1]["precision"] == pytest.approx(2 / 3) and by_class[1]["recall"] == pytest.approx(1.0)
    assert by_class[2]["precision"] == pytest.approx(1.0) and by_class[2]["recall"] == pytest.approx(2 / 3)
    assert by_class[0]["f_measure"] == pytest.approx(0.5)
    assert by_class[1]["f_measure"] == pytest.approx(0.8)
    assert by_class[2]["f_measure"] == pytest.approx(0.8)
    assert [c["support"] for c in m["per_class"]] == [2, 2, 3]
    assert m["macro_precision"] == pytest.approx((0.5 + 2 / 3 + 1.0) / 3)
    assert m["macro_recall"] == pytest.approx((0.5 + 1.0 + 2 / 3) / 3)
    assert m["macro_f_measure"] == pytest.approx(0.7)
    assert m["top_confusions"] == [{"true": 0, "predicted": 1, "count": 1}, {"true": 2, "predicted": 0, "count": 1}]


def test_a_class_never_predicted_or_absent_scores_zero_without_dividing_by_zero():
    m = classification_metrics([0, 0, 1], [0, 0, 0], 3)
    by_class = {c["class"]: c for c in m["per_class"]}
    assert by_class[1] == {"class": 1, "precision": 0.0, "recall": 0.0, "f_measure": 0.0, "support": 1,
                           "predicted": 0}
    assert by_class[2]["support"] == 0 and by_class[2]["recall"] == 0.0
    assert m["accuracy"] == pytest.approx(2 / 3)
    assert m["top_confusions"] == [{"true": 1, "predicted": 0, "count": 1}]


def test_confusion_matrix_counts_repeated_pairs():
    cm = confusion_matrix([1, 1, 1, 0], [0, 0, 1, 0], 2)
    assert cm.tolist() == [[1, 0], [2, 1]]
    assert cm.sum() == 4


def test_regression_metrics_match_a_hand_computation():
    t = np.array([1.0, 2.0, 3.0, 4.0])
    p = np.array([1.5, 2.0, 2.5, 5.0])
    m = regression_metrics(t, p)
    assert m["mae"] == pytest.approx(0.5)
    assert m["rmse"] == pytest.approx(math.sqrt(0.375))
    assert m["r2"] == pytest.approx(1 - 1.5 / 5.0)  # SS_res 1.5, SS_tot 5
    assert m["bias"] == pytest.approx(0.25)
    assert m["max_abs_error"] == pytest.approx(1.0)
    assert regression_metrics(np.ones(3), np.ones(3))["r2"] is None  # constant targets: R^2 undefined


# ---------------------------------------------------------------------------------------------- a tiny run

def test_evaluate_run_matches_numpy_on_a_tiny_classifier(tmp_path):
    run_dir = tiny_run(tmp_path)
    seen = []
    result = evaluate_run(run_dir, "best", batch_size=4,  # 6 samples: the last batch is padded
                          progress=lambda done, total: seen.append((done, total)))
    assert seen == [(4, 6), (6, 6)]  # real samples only, after each batch
    logits = X @ W + B
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(result.outputs, probs, rtol=1e-5, atol=1e-6)
    expected_pred = probs.argmax(axis=1)
    np.testing.assert_array_equal(result.predictions, expected_pred)
    hand = classification_metrics(LABELS, expected_pred, 3)
    m = result.metrics
    assert m["confusion_matrix"] == hand["confusion_matrix"]
    assert m["accuracy"] == pytest.approx(np.mean(expected_pred == LABELS))
    assert sum(map(sum, m["confusion_matrix"])) == len(X)
    assert m["label_variable"] == "y" and m["model"] == "best" and m["task"] == "classification"

    folder = write_evaluation(result)
    assert folder == evaluation_dir(run_dir, "best")
    metrics, rows = read_evaluation(folder)
    assert metrics["macro_f_measure"] == pytest.approx(hand["macro_f_measure"])
    assert metrics["confusion_matrix"] == hand["confusion_matrix"]  # compact rows still parse back
    assert [int(r["prediction"]) for r in rows] == expected_pred.tolist()
    assert [r["source"] for r in rows] == [f"row {i + 1}" for i in range(len(X))]
    assert [int(r["correct"]) for r in rows] == (expected_pred == LABELS).astype(int).tolist()
    np.testing.assert_allclose([[float(r[f"p_{c}"]) for c in range(3)] for r in rows], probs, rtol=1e-4)
    assert not [n for n in os.listdir(folder) if n.endswith(".tmp")]  # written atomically


def test_evaluate_run_regression_statistics(tmp_path):
    targets = (X @ np.array([1.0, -2.0]) + 0.5).round(3)
    run_dir = tiny_run(tmp_path, loss="SquaredError", targets=targets, out=1)
    result = evaluate_run(run_dir, "final")
    pred = (X @ W[:, :1] + B[:1]).ravel()
    np.testing.assert_allclose(result.predictions.ravel(), pred, rtol=1e-5)
    m = result.metrics
    assert m["task"] == "regression"
    assert m["mae"] == pytest.approx(np.mean(np.abs(pred - targets)), rel=1e-5)
    assert m["rmse"] == pytest.approx(np.sqrt(np.mean((pred - targets) ** 2)), rel=1e-5)
    ss_tot = np.sum((targets - targets.mean()) ** 2)
    assert m["r2"] == pytest.approx(1 - np.sum((pred - targets) ** 2) / ss_tot, rel=1e-5)
    text = summary_text(m)
    assert "MAE" in text and "RMSE" in text and "R^2" in text


def test_missing_parameters_and_bad_labels_are_reported_with_a_fix(tmp_path):
    run_dir = tiny_run(tmp_path, with_best=False)
    with pytest.raises(EvaluationError, match="use --model final"):
        evaluate_run(run_dir, "best")
    with pytest.raises(EvaluationError, match="not a run directory"):
        evaluate_run(str(tmp_path), "best")
    other = tmp_path / "other"
    other.mkdir()
    bad = tiny_run(other, targets=np.array([0, 1, 2, 5, 0, 1]))
    # Found where the data loads (nnconsole.engine.data.labels), located by CSV line and column
    # (tests/engine/data/test_labels.py).
    with pytest.raises(DatasetError, match=r"valid.csv line 5, column y: class label '5' is outside the network's "
                                           r"classes: class labels are whole numbers from 0 to 2"):
        evaluate_run(bad, "best")


def test_cli_evaluate_writes_files_and_prints_a_summary(tmp_path, capsys):
    run_dir = tiny_run(tmp_path)
    out = tmp_path / "eval-out"
    events = tmp_path / "events.jsonl"
    assert cli_main(["evaluate", run_dir, "--model", "final", "--output", str(out), "--events", str(events)]) == 0
    printed = capsys.readouterr().out
    assert "accuracy" in printed and "macro precision" in printed and str(out) in printed
    found, _ = read_events(str(events))  # what the GUI reads: progress, then the folder
    assert found[-2:] == [{"event": EVALUATE_PROGRESS_EVENT, "done": len(X), "total": len(X)},
                          {"event": EVALUATE_FINISHED_EVENT, "output": str(out)}]
    assert {e["event"] for e in found[:-1]} == {EVALUATE_PROGRESS_EVENT}
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["model"] == "final" and metrics["count"] == len(X)
    with open(out / "samples.csv", newline="") as fh:
        header = next(csv.reader(fh))
    assert header[:5] == ["index", "source", "label", "prediction", "correct"]
    assert header[5:] == ["p_0", "p_1", "p_2"]


def test_cli_evaluate_bad_input_exits_2(tmp_path, capsys):
    run_dir = tiny_run(tmp_path, with_best=False)
    assert cli_main(["evaluate", run_dir]) == 2
    err = capsys.readouterr().err
    assert "parameters_best.h5" in err and "--model final" in err
