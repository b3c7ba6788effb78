"""The classifier curves of the EVALUATION tab, from class probabilities and true labels (numpy only, no nnabla).

- Likelihood graph (NNC's name): for each threshold on the confidence (the top class's probability),
  the share of samples at or above it (coverage) and the accuracy among them; it tells how much more
  accurate the model is when it is sure, and how many samples that leaves.
- ROC curve and its area (AUC) and the precision-recall curve with its average precision (AP), for
  one class against the rest (the positive class 1 of a binary classifier); ties in the scores are
  one step, as scikit-learn draws them.
- Top-N accuracy: the true class among the N most probable ones (ties broken toward the lower class).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

LIKELIHOOD_THRESHOLDS = tuple(round(0.05 * i, 2) for i in range(20))  # 0.00, 0.05, ... 0.95
TOP_N = 5


def _as_arrays(probabilities: Any, labels: Any) -> Tuple[np.ndarray, np.ndarray]:
    p = np.asarray(probabilities, dtype=np.float64)
    p = p.reshape(len(p), -1) if p.size else p.reshape(len(p), p.shape[-1] if p.ndim > 1 else 0)
    y = np.asarray(labels, dtype=np.int64).reshape(-1)
    if len(y) != len(p):
        raise ValueError(f"{len(p)} rows of probabilities but {len(y)} labels")
    return p, y


def top_n_accuracy(probabilities: Any, labels: Any, n: int) -> float:
    """Share of samples whose true class is among the ``n`` most probable (0.0 without samples)."""
    p, y = _as_arrays(probabilities, labels)
    if not len(y):
        return 0.0
    order = np.argsort(-p, axis=1, kind="stable")[:, :max(1, int(n))]
    return float(np.mean(np.any(order == y[:, None], axis=1)))


def likelihood_graph(probabilities: Any, labels: Any, thresholds: Sequence[float] = LIKELIHOOD_THRESHOLDS
                     ) -> List[Dict[str, Optional[float]]]:
    """Per threshold t: coverage (share of samples whose confidence is >= t), accuracy among them (None if none)."""
    p, y = _as_arrays(probabilities, labels)
    confidence = p.max(axis=1) if len(p) else np.zeros(0)
    correct = (np.argmax(p, axis=1) == y) if len(p) else np.zeros(0, dtype=bool)
    points = []
    for t in thresholds:
        kept = confidence >= t
        count = int(kept.sum())
        points.append({"threshold": float(t), "coverage": count / len(y) if len(y) else 0.0,
                       "accuracy": float(correct[kept].mean()) if count else None, "count": count})
    return points


def _ranked(scores: Any, positives: Any) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(true positives, false positives, thresholds) at each distinct score, highest score first."""
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    pos = np.asarray(positives, dtype=bool).reshape(-1)
    order = np.argsort(-s, kind="stable")
    s, pos = s[order], pos[order]
    last_of_tie = np.r_[np.flatnonzero(np.diff(s) != 0), len(s) - 1] if len(s) else np.zeros(0, dtype=np.int64)
    tp = np.cumsum(pos)[last_of_tie]
    fp = np.cumsum(~pos)[last_of_tie]
    return tp.astype(np.float64), fp.astype(np.float64), s[last_of_tie]


def roc_curve(scores: Any, positives: Any) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(false positive rate, true positive rate, thresholds), from (0, 0) to (1, 1); a rate is 0 without its class."""
    tp, fp, thresholds = _ranked(scores, positives)
    p_total, n_total = (tp[-1], fp[-1]) if len(tp) else (0.0, 0.0)
    tpr = np.r_[0.0, tp / p_total if p_total else np.zeros_like(tp)]
    fpr = np.r_[0.0, fp / n_total if n_total else np.zeros_like(fp)]
    return fpr, tpr, np.r_[np.inf, thresholds]


def area(x: Any, y: Any) -> float:
    """Area under a curve by the trapezoid rule (x ascending)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    return float(np.sum((x[1:] - x[:-1]) * (y[1:] + y[:-1]) / 2.0)) if len(x) > 1 else 0.0


def roc_auc(scores: Any, positives: Any) -> Optional[float]:
    """Area under the ROC curve; None when the samples hold only one of the two sides (it is undefined)."""
    pos = np.asarray(positives, dtype=bool)
    if pos.all() or not pos.any():
        return None
    fpr, tpr, _ = roc_curve(scores, positives)
    return area(fpr, tpr)


def pr_curve(scores: Any, positives: Any) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(recall, precision, thresholds) from the highest threshold down, starting at recall 0 with precision 1."""
    tp, fp, thresholds = _ranked(scores, positives)
    p_total = tp[-1] if len(tp) else 0.0
    recall = np.r_[0.0, tp / p_total if p_total else np.zeros_like(tp)]
    precision = np.r_[1.0, tp / np.maximum(tp + fp, 1.0)]
    return recall, precision, np.r_[np.inf, thresholds]


def average_precision(scores: Any, positives: Any) -> Optional[float]:
    """Sum over thresholds of (recall gained) x precision; None when there is no positive sample."""
    if not np.asarray(positives, dtype=bool).any():
        return None
    recall, precision, _ = pr_curve(scores, positives)
    return float(np.sum(np.diff(recall) * precision[1:]))


def one_vs_rest(probabilities: Any, labels: Any, cls: int) -> Tuple[np.ndarray, np.ndarray]:
    """(scores, positives) for class ``cls`` against all others."""
    p, y = _as_arrays(probabilities, labels)
    return p[:, cls], y == cls


def curve_metrics(probabilities: Any, labels: Any) -> Dict[str, Any]:
    """The figures metrics.json keeps: top-N accuracy, per-class ROC AUC and AP (with macro means), likelihood graph."""
    p, y = _as_arrays(probabilities, labels)
    k = p.shape[1]
    aucs = [roc_auc(*one_vs_rest(p, y, c)) for c in range(k)]
    aps = [average_precision(*one_vs_rest(p, y, c)) for c in range(k)]
    defined_auc = [a for a in aucs if a is not None]
    defined_ap = [a for a in aps if a is not None]
    return {
        "top_n_accuracy": {str(n): top_n_accuracy(p, y, n) for n in range(1, min(TOP_N, k) + 1)},
        "roc_auc": aucs,
        "average_precision": aps,
        "macro_roc_auc": float(np.mean(defined_auc)) if defined_auc else None,
        "macro_average_precision": float(np.mean(defined_ap)) if defined_ap else None,
        "likelihood": likelihood_graph(p, y),
    }
