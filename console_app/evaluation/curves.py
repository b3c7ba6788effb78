"""The classifier curves of the EVALUATION tab: NNC's likelihood graph with top-N accuracy, and ROC / PR curves.

Both are drawn from the per-sample probabilities in ``samples.csv`` (so an evaluation written by an
older version shows them too); the arithmetic is :mod:`nnconsole.engine.metrics.curves`.
"""
from __future__ import annotations

import html
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from nnconsole.app.widgets.plots import color, make_plot_widget
from nnconsole.engine.metrics.curves import (TOP_N, average_precision, likelihood_graph, one_vs_rest, pr_curve,
                                             roc_auc, roc_curve, top_n_accuracy)

MAX_CURVES = 10  # "every class" draws at most this many classes (the legend stays readable)


def class_arrays(rows: Sequence[Dict[str, str]]) -> Tuple[np.ndarray, np.ndarray]:
    """(probabilities (n, K), true labels (n,)) from classification rows of samples.csv."""
    if not rows:
        return np.zeros((0, 0)), np.zeros(0, dtype=np.int64)
    keys = sorted((k for k in rows[0] if k.startswith("p_") and k[2:].isdigit()), key=lambda k: int(k[2:]))
    probs = np.array([[float(r[k]) for k in keys] for r in rows], dtype=np.float64)
    labels = np.array([int(float(r["label"])) for r in rows], dtype=np.int64)
    return probs, labels


def _fmt(value: Optional[float]) -> str:
    return "n/a" if value is None else f"{value:.3f}"


class LikelihoodView(QWidget):
    """Accuracy and coverage of the samples whose confidence reaches each threshold, and top-N accuracy."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("likelihood_view")
        self.plot = make_plot_widget("Likelihood graph", "confidence threshold (top class probability)",
                                     "share", legend=True)
        self.plot.setObjectName("likelihood_plot")
        item = self.plot.getPlotItem()
        item.setYRange(0.0, 1.02, padding=0)
        item.setXRange(0.0, 1.0, padding=0.02)
        self.accuracy = item.plot([], [], pen=pg.mkPen(color(0), width=2), symbol="o", symbolSize=5,
                                  symbolBrush=pg.mkBrush(color(0)), symbolPen=None,
                                  name="accuracy of the samples at or above")
        self.coverage = item.plot([], [], pen=pg.mkPen(color(1), width=2, style=Qt.DashLine),
                                  name="share of samples at or above")
        item.legend.anchor((0, 1), (0, 1), offset=(8, -8))  # bottom left: both curves start high on the left
        self.top_n = QLabel(self)
        self.top_n.setObjectName("top_n_accuracy")
        self.top_n.setTextFormat(Qt.RichText)
        self.points: List[dict] = []
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.top_n)
        layout.addWidget(self.plot, 1)

    def clear(self) -> None:
        self.points = []
        self.accuracy.setData([], [])
        self.coverage.setData([], [])
        self.top_n.setText("")

    def set_data(self, probs: np.ndarray, labels: np.ndarray) -> None:
        self.points = likelihood_graph(probs, labels)
        with_accuracy = [p for p in self.points if p["accuracy"] is not None]
        self.accuracy.setData([p["threshold"] for p in with_accuracy], [p["accuracy"] for p in with_accuracy])
        self.coverage.setData([p["threshold"] for p in self.points], [p["coverage"] for p in self.points])
        k = probs.shape[1] if probs.ndim == 2 else 0
        tops = [f"top-{n} <b>{top_n_accuracy(probs, labels, n):.2%}</b>" for n in range(1, min(TOP_N, k) + 1)]
        self.top_n.setText("Top-N accuracy (true class among the N most probable): " + " &middot; ".join(tops))


class RocPrView(QWidget):
    """ROC and precision-recall curves, one class against the rest (or every class), with AUC and AP."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("roc_pr_view")
        self.class_combo = QComboBox(self)
        self.class_combo.setObjectName("roc_class")
        self.summary = QLabel(self)
        self.summary.setObjectName("roc_summary")
        self.summary.setTextFormat(Qt.RichText)
        self.roc = make_plot_widget("ROC curve", "false positive rate", "true positive rate", legend=True)
        self.roc.setObjectName("roc_plot")
        self.pr = make_plot_widget("Precision-recall curve", "recall", "precision", legend=True)
        self.pr.setObjectName("pr_plot")
        for plot in (self.roc, self.pr):
            plot.getPlotItem().setRange(xRange=(0, 1), yRange=(0, 1.02), padding=0.02)
        # Legends where good curves are not: ROC curves climb the top-left corner, PR curves run along the top.
        self.roc.getPlotItem().legend.anchor((1, 1), (1, 1), offset=(-8, -8))
        self.pr.getPlotItem().legend.anchor((0, 1), (0, 1), offset=(8, -8))
        self.probs = np.zeros((0, 0))
        self.labels = np.zeros(0, dtype=np.int64)
        self.areas: Dict[int, Tuple[Optional[float], Optional[float]]] = {}
        self.names: List[str] = []
        top = QHBoxLayout()
        top.addWidget(QLabel("Class:"))
        top.addWidget(self.class_combo)
        top.addWidget(self.summary, 1)
        plots = QHBoxLayout()
        plots.addWidget(self.roc)
        plots.addWidget(self.pr)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addLayout(plots, 1)
        self.class_combo.currentIndexChanged.connect(lambda _i: self._draw())

    def clear(self) -> None:
        self.probs, self.labels, self.areas, self.names = np.zeros((0, 0)), np.zeros(0, dtype=np.int64), {}, []
        self.class_combo.blockSignals(True)
        self.class_combo.clear()
        self.class_combo.blockSignals(False)
        self._draw()

    def set_data(self, probs: np.ndarray, labels: np.ndarray, names: Sequence[str] = ()) -> None:
        """Show the curves of ``probs`` (n, K) against ``labels``; ``names`` (labels.txt) name the classes."""
        self.probs, self.labels = probs, labels
        self.names = [str(n) for n in names]
        k = probs.shape[1]
        self.areas = {c: (roc_auc(*one_vs_rest(probs, labels, c)), average_precision(*one_vs_rest(probs, labels, c)))
                      for c in range(k)}
        self.class_combo.blockSignals(True)
        self.class_combo.clear()
        if k > 2:
            self.class_combo.addItem(f"every class (first {MAX_CURVES})" if k > MAX_CURVES else "every class", None)
        for c in range(k):
            self.class_combo.addItem(f"{self._name(c)} vs. the rest"
                                     + (" (binary: positive class)" if k == 2 and c == 1 else ""), c)
        if k == 2:
            self.class_combo.setCurrentIndex(1)  # a binary classifier's positive class
        self.class_combo.blockSignals(False)
        self._draw()

    def _name(self, c: int, rich: bool = False) -> str:
        """'3', or '3 three' with class names (escaped for the legends, which read HTML)."""
        name = self.names[c] if c < len(self.names) else ""
        if rich:
            name = html.escape(name)
        return f"{c} {name}" if name and name != str(c) else str(c)

    def shown_classes(self) -> List[int]:
        chosen = self.class_combo.currentData()
        if self.class_combo.count() == 0:
            return []
        return list(range(min(MAX_CURVES, self.probs.shape[1]))) if chosen is None else [int(chosen)]

    def _draw(self) -> None:
        roc, pr = self.roc.getPlotItem(), self.pr.getPlotItem()
        for item in (roc, pr):
            item.clear()
            if item.legend is not None:
                item.legend.clear()
        classes = self.shown_classes()
        if classes:
            roc.plot([0, 1], [0, 1], pen=pg.mkPen("#999999", style=Qt.DashLine), name="chance")
        for c in classes:
            scores, positives = one_vs_rest(self.probs, self.labels, c)
            auc, ap = self.areas[c]
            pen = pg.mkPen(color(c if len(classes) > 1 else 0), width=2)
            fpr, tpr, _ = roc_curve(scores, positives)
            roc.plot(fpr, tpr, pen=pen, name=f"class {self._name(c, rich=True)}: AUC {_fmt(auc)}")
            recall, precision, _ = pr_curve(scores, positives)
            pr.plot(recall, precision, pen=pen, name=f"class {self._name(c, rich=True)}: AP {_fmt(ap)}")
        defined = [a for c, (a, _) in self.areas.items() if a is not None]
        defined_ap = [p for c, (_, p) in self.areas.items() if p is not None]
        self.summary.setText(
            "" if not self.areas else
            f"macro ROC AUC <b>{_fmt(float(np.mean(defined)) if defined else None)}</b> &middot; macro average "
            f"precision <b>{_fmt(float(np.mean(defined_ap)) if defined_ap else None)}</b> (one class against the rest)")
