"""Widgets that show ``metrics.json``: the headline, per-class precision/recall/F-measure with macro
averages, the most frequent confusions, and for regression the error statistics with a scatter plot."""
from __future__ import annotations

import html
import os
from typing import Any, Dict, List, Optional

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (QAbstractItemView, QHeaderView, QLabel, QListWidget, QTableWidget, QTableWidgetItem,
                               QVBoxLayout, QWidget)

from nnconsole.app.widgets.plots import make_plot_widget
from nnconsole.engine.data.labels import project_class_names
from nnconsole.engine.errors import NnconsoleError
from nnconsole.engine.metrics.results import samples_text
from nnconsole.engine.project.io import load_project
from nnconsole.engine.rundir.protocol import RESOLVED_FILE


def with_class_names(metrics: Dict[str, Any]) -> Dict[str, Any]:
    """``metrics`` with ``class_names``: as the evaluation recorded them, else (an evaluation made before
    labels.txt existed) read now beside the run's training CSV, as the engine reads them (``engine.data.labels``);
    none when there is no labels.txt. Every view of the tab names classes from there, numbers as fallback."""
    if metrics.get("task", "classification") != "classification" or metrics.get("class_names"):
        return metrics
    run_dir = metrics.get("run_dir")
    try:
        names = project_class_names(load_project(os.path.join(str(run_dir), RESOLVED_FILE))) if run_dir else []
    except (OSError, ValueError, NnconsoleError):  # a run folder moved or damaged: numbers only
        names = []
    if names:
        metrics = dict(metrics, class_names=names[:int(metrics.get("num_classes") or len(names))])
    return metrics


def headline(metrics: Dict[str, Any]) -> str:
    """One rich-text line with the figures a person looks at first."""
    n = metrics.get("count", 0)
    model = metrics.get("model", "?")
    where = html.escape(samples_text(metrics))
    if metrics.get("task") == "classification":
        top = metrics.get("top_n_accuracy") or {}
        best_n = max(top, key=int, default="1")
        extra = f" &middot; top-{best_n} <b>{top[best_n]:.2%}</b>" if best_n != "1" else ""
        auc = metrics.get("macro_roc_auc")
        extra += f" &middot; macro ROC AUC <b>{auc:.4f}</b>" if auc is not None else ""
        return (f"<span style='font-size:15pt'><b>Accuracy {metrics['accuracy']:.2%}</b></span> &nbsp; on {n:,} "
                f"{where} ({metrics['num_classes']} classes, <b>{model}</b> model) &nbsp;&middot;&nbsp; "
                f"macro precision <b>{metrics['macro_precision']:.4f}</b> &middot; macro recall "
                f"<b>{metrics['macro_recall']:.4f}</b> &middot; macro F-measure "
                f"<b>{metrics['macro_f_measure']:.4f}</b>{extra}")
    r2 = metrics.get("r2")
    return (f"<span style='font-size:15pt'><b>RMSE {metrics['rmse']:.4g}</b></span> &nbsp; MAE "
            f"<b>{metrics['mae']:.4g}</b> &middot; R<sup>2</sup> <b>{'n/a' if r2 is None else f'{r2:.4f}'}</b> "
            f"&middot; bias {metrics.get('bias', 0.0):+.4g} &middot; on {n:,} {where} (<b>{model}</b> model)")


def class_label(metrics: Dict[str, Any], index: int) -> str:
    """'3' or, with class names (labels.txt), '3 three'."""
    names = metrics.get("class_names") or []
    name = names[index] if isinstance(names, list) and 0 <= index < len(names) else ""
    return f"{index} {name}" if isinstance(name, str) and name and name != str(index) else str(index)


class PerClassTable(QTableWidget):
    """Class | Precision | Recall | F-measure | Support, then the macro averages."""

    HEADERS = ("Class", "Precision", "Recall", "F-measure", "Support")

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(0, len(self.HEADERS), parent)
        self.setObjectName("per_class_table")
        self.setHorizontalHeaderLabels(list(self.HEADERS))
        self.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.verticalHeader().hide()
        self.verticalHeader().setDefaultSectionSize(22)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.Stretch)

    def set_metrics(self, metrics: Dict[str, Any]) -> None:
        per_class = metrics.get("per_class", [])
        self.setRowCount(len(per_class) + 1)
        for r, c in enumerate(per_class):
            cells = [class_label(metrics, c["class"]), f"{c['precision']:.4f}", f"{c['recall']:.4f}", f"{c['f_measure']:.4f}",
                     str(c["support"])]
            self._row(r, cells)
        bold = QFont()
        bold.setBold(True)
        last = len(per_class)
        self._row(last, ["macro avg", f"{metrics['macro_precision']:.4f}", f"{metrics['macro_recall']:.4f}",
                         f"{metrics['macro_f_measure']:.4f}", str(metrics.get("count", ""))], bold)

    def _row(self, r: int, cells: List[str], font: Optional[QFont] = None) -> None:
        for c, text in enumerate(cells):
            item = QTableWidgetItem(text)
            item.setTextAlignment(Qt.AlignCenter)
            if font is not None:
                item.setFont(font)
            self.setItem(r, c, item)

    def value(self, row_label: str, column: str) -> str:
        """The cell of ``column`` in the row of class ``row_label`` (its number; or 'macro avg')."""
        col = self.HEADERS.index(column)
        for r in range(self.rowCount()):
            if self.item(r, 0).text().split(" ", 1)[0] == row_label or self.item(r, 0).text() == row_label:
                return self.item(r, col).text()
        raise KeyError(row_label)


class TopConfusions(QWidget):
    """The most frequent (true -> predicted) mistakes."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.list = QListWidget(self)
        self.list.setObjectName("top_confusions")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(QLabel("<b>Most frequent confusions</b>", self))
        layout.addWidget(self.list, 1)

    def set_metrics(self, metrics: Dict[str, Any]) -> None:
        self.list.clear()
        confusions = metrics.get("top_confusions", [])
        for c in confusions:
            share = c["count"] / max(1, next((p["support"] for p in metrics.get("per_class", [])
                                               if p["class"] == c["true"]), 1))
            true, predicted = class_label(metrics, int(c["true"])), class_label(metrics, int(c["predicted"]))
            self.list.addItem(f"true {true} \u2192 predicted {predicted}:  {c['count']} ({share:.1%} of class {true})")
        if not confusions:
            self.list.addItem("no mistakes")


class RegressionView(QWidget):
    """Error statistics and a predicted-vs-true scatter with the y = x line."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("regression_view")
        self.stats = QLabel(self)
        self.stats.setObjectName("regression_stats")
        self.stats.setTextFormat(Qt.RichText)
        self.plot = make_plot_widget("Predicted vs. true", "true value", "predicted value", legend=True)
        self.plot.setObjectName("regression_scatter")
        item = self.plot.getPlotItem()
        self.identity = item.plot([], [], pen=pg.mkPen("#888888", width=1.5, style=Qt.DashLine), name="y = x")
        self.scatter = item.plot([], [], pen=None, symbol="o", symbolSize=6,
                                 symbolBrush=pg.mkBrush(31, 119, 180, 150), symbolPen=None, name="validation sample")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.stats)
        layout.addWidget(self.plot, 1)

    def clear(self) -> None:
        """No regression shown (another project, or a run not evaluated yet)."""
        self.stats.setText("")
        self.scatter.setData([], [])
        self.identity.setData([], [])

    def set_data(self, metrics: Dict[str, Any], rows: List[Dict[str, str]]) -> None:
        r2 = metrics.get("r2")
        self.stats.setText(
            "<table cellpadding='3'>"
            f"<tr><td>MAE</td><td><b>{metrics['mae']:.5g}</b></td><td>&nbsp;RMSE</td><td><b>{metrics['rmse']:.5g}"
            f"</b></td><td>&nbsp;R<sup>2</sup></td><td><b>{'n/a' if r2 is None else f'{r2:.4f}'}</b></td></tr>"
            f"<tr><td>bias</td><td>{metrics.get('bias', 0.0):+.4g}</td><td>&nbsp;max |error|</td>"
            f"<td>{metrics.get('max_abs_error', 0.0):.4g}</td><td>&nbsp;samples</td><td>{metrics['count']:,}</td></tr>"
            "</table>")
        t_keys = [k for k in (rows[0].keys() if rows else []) if k == "target" or k.startswith("target__")]
        p_keys = [k for k in (rows[0].keys() if rows else []) if k == "prediction" or k.startswith("prediction__")]
        t = np.array([[float(r[k]) for k in t_keys] for r in rows], dtype=float).ravel() if rows else np.zeros(0)
        p = np.array([[float(r[k]) for k in p_keys] for r in rows], dtype=float).ravel() if rows else np.zeros(0)
        self.scatter.setData(t, p)
        if t.size:
            lo, hi = float(min(t.min(), p.min())), float(max(t.max(), p.max()))
            self.identity.setData([lo, hi], [lo, hi])
