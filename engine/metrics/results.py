"""Evaluation results without nnabla: the metrics NNC shows (accuracy, confusion matrix, per-class precision /
recall / F-measure, regression errors), where a run's evaluation lives and how it is written and read.

The GUI's EVALUATION and DATASET tabs use this module in their own process; running the network over the
validation set is :mod:`nnconsole.engine.evaluate.evaluation` (``nnconsole evaluate``), in a subprocess.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from nnconsole.engine.atomic import folder_problem
from nnconsole.engine.errors import NnconsoleError
from nnconsole.engine.project.io import atomic_write, load_project
from nnconsole.engine.project.model import Project
from nnconsole.engine.rundir.protocol import EVALUATION_DIR, RESOLVED_FILE
from nnconsole.engine.rundir import safe_json
from nnconsole.engine.layers import get_spec
from nnconsole.engine.layers.types.inputs import input_variable
from nnconsole.engine.network.shapes import first_loss

MODELS = ("best", "final")
SAMPLES_FILE = "samples.csv"  # in an evaluation folder (<run>/evaluation/<model>...)
EVALUATION_METRICS_FILE = "metrics.json"  # beside it (not the run's metrics.jsonl)
TOP_CONFUSIONS = 10


class EvaluationError(NnconsoleError, ValueError):
    """The run cannot be evaluated (no parameters, labels out of range...); the message says how to fix it."""

@dataclass
class EvaluationResult:
    """Outputs of the runtime network on every validation sample, and the metrics computed from them.

    ``outputs`` is (size, K): class probabilities for classifiers (K classes; two columns for a
    single-output binary classifier), predicted values for regression. ``targets`` is (size, T).
    """

    run_dir: str
    model: str
    task: str
    dataset: str
    label_variable: str
    targets: np.ndarray
    outputs: np.ndarray
    predictions: np.ndarray
    sources: List[str]
    metrics: Dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------- metrics

def _safe_div(a: float, b: float) -> float:
    return float(a) / float(b) if b else 0.0


def confusion_matrix(labels: Sequence[int], predictions: Sequence[int], num_classes: int) -> np.ndarray:
    """Counts with true classes as rows and predicted classes as columns."""
    matrix = np.zeros((num_classes, num_classes), dtype=np.int64)
    np.add.at(matrix, (np.asarray(labels, dtype=np.int64), np.asarray(predictions, dtype=np.int64)), 1)
    return matrix


def classification_metrics(labels: Sequence[int], predictions: Sequence[int], num_classes: int,
                           top: int = TOP_CONFUSIONS) -> Dict[str, Any]:
    """Accuracy, confusion matrix, per-class precision/recall/F-measure, macro averages, top confusions.

    A class never predicted has precision 0; a class absent from the labels has recall 0 (as
    scikit-learn's ``zero_division=0``). Macro averages are plain means over all classes.
    """
    labels = np.asarray(labels, dtype=np.int64)
    predictions = np.asarray(predictions, dtype=np.int64)
    cm = confusion_matrix(labels, predictions, num_classes)
    total = int(cm.sum())
    per_class = []
    for c in range(num_classes):
        tp = int(cm[c, c])
        predicted, actual = int(cm[:, c].sum()), int(cm[c, :].sum())
        precision, recall = _safe_div(tp, predicted), _safe_div(tp, actual)
        f = _safe_div(2 * precision * recall, precision + recall)
        per_class.append({"class": c, "precision": precision, "recall": recall, "f_measure": f,
                          "support": actual, "predicted": predicted})
    confusions = [{"true": int(t), "predicted": int(p), "count": int(cm[t, p])}
                  for t in range(num_classes) for p in range(num_classes) if t != p and cm[t, p] > 0]
    confusions.sort(key=lambda c: (-c["count"], c["true"], c["predicted"]))
    return {
        "task": "classification",
        "count": total,
        "num_classes": num_classes,
        "accuracy": _safe_div(np.trace(cm), total),
        "error": 1.0 - _safe_div(np.trace(cm), total) if total else 0.0,
        "confusion_matrix": cm.tolist(),
        "per_class": per_class,
        "macro_precision": float(np.mean([c["precision"] for c in per_class])) if per_class else 0.0,
        "macro_recall": float(np.mean([c["recall"] for c in per_class])) if per_class else 0.0,
        "macro_f_measure": float(np.mean([c["f_measure"] for c in per_class])) if per_class else 0.0,
        "top_confusions": confusions[:top],
    }


def probability_columns(outputs: np.ndarray) -> np.ndarray:
    """Class probabilities (n, K) of a classifier's outputs: one Sigmoid output p becomes (1 - p, p)."""
    outputs = np.asarray(outputs, dtype=np.float64).reshape(len(outputs), -1)
    if outputs.shape[1] == 1:  # one probability (Sigmoid/BinaryCrossEntropy): class 1 when >= 0.5
        p = np.clip(outputs[:, 0], 0.0, 1.0)
        return np.stack([1.0 - p, p], axis=1)
    return outputs


def regression_metrics(targets: np.ndarray, predictions: np.ndarray) -> Dict[str, Any]:
    """MAE, RMSE, R^2 (averaged over output dimensions, None when the targets are constant), bias."""
    t = np.asarray(targets, dtype=np.float64).reshape(len(targets), -1)
    p = np.asarray(predictions, dtype=np.float64).reshape(len(predictions), -1)
    diff = p - t
    ss_res = np.sum(diff ** 2, axis=0)
    ss_tot = np.sum((t - t.mean(axis=0)) ** 2, axis=0)
    r2_each = [1.0 - r / s for r, s in zip(ss_res, ss_tot) if s > 0]
    return {
        "task": "regression",
        "count": int(t.shape[0]),
        "outputs": int(t.shape[1]),
        "mae": float(np.mean(np.abs(diff))) if diff.size else 0.0,
        "rmse": float(math.sqrt(np.mean(diff ** 2))) if diff.size else 0.0,
        "r2": float(np.mean(r2_each)) if r2_each else None,
        "bias": float(np.mean(diff)) if diff.size else 0.0,
        "max_abs_error": float(np.max(np.abs(diff))) if diff.size else 0.0,
    }


# ---------------------------------------------------------------------------------------------- where it lives

def parameters_path(run_dir: str, model: str) -> str:
    """``<run>/parameters_<model>.h5``; raises EvaluationError naming the fix when it is missing."""
    if model not in MODELS:
        raise EvaluationError(f"unknown model '{model}'; use --model best or --model final")
    path = os.path.join(run_dir, f"parameters_{model}.h5")
    if not os.path.isfile(path):
        other = "final" if model == "best" else "best"
        hint = (f"use --model {other}" if os.path.isfile(os.path.join(run_dir, f"parameters_{other}.h5"))
                else "train the run to the end of at least one epoch (or resume it with 'nnconsole train "
                     f"--resume {run_dir}')")
        raise EvaluationError(f"{path}: no {model} parameters in this run; {hint}")
    return path


def open_run(run_dir: str, model: str) -> tuple:
    """(absolute run folder, its resolved project, its ``model`` parameter file) or EvaluationError naming the fix."""

    run_dir = os.path.abspath(run_dir)
    project_file = os.path.join(run_dir, RESOLVED_FILE)
    if not os.path.isfile(project_file):
        raise EvaluationError(f"{run_dir}: not a run directory (no {RESOLVED_FILE}); give a folder under "
                              "<project folder>/results/<project name>/")
    params_file = parameters_path(run_dir, model)
    return run_dir, load_project(project_file), params_file  # checked when the run started


def evaluation_dir(run_dir: str, model: str, dataset: Optional[str] = None) -> str:
    """Where ``nnconsole evaluate`` writes by default: ``<run>/evaluation/<model>``, or for another dataset CSV
    ``<run>/evaluation/<model>-<CSV name>-<6 hex digits of its absolute path>`` (two test.csv files differ)."""
    if dataset is None:
        return os.path.join(run_dir, EVALUATION_DIR, model)
    full = os.path.abspath(dataset)
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", os.path.splitext(os.path.basename(full))[0])[:40] or "data"
    digest = hashlib.sha1(full.encode("utf-8", "surrogateescape")).hexdigest()[:6]
    return os.path.join(run_dir, EVALUATION_DIR, f"{model}-{stem}-{digest}")


def target_variable(project: Project) -> tuple:
    """(loss layer type, dataset variable holding the loss's target) of the first loss layer."""

    name = first_loss(project.network)
    if name is None:
        raise EvaluationError("the network has no loss layer, so there is no target to compare with; add e.g. "
                              "SoftmaxCrossEntropy fed by the output and the label Input")
    loss = project.network.layer(name)
    current = project.network.layer(loss.inputs[1])
    seen = set()
    while not get_spec(current.type).is_input:  # follow single-input chains (e.g. a OneHot) to the Input
        if current.name in seen or not current.inputs:
            raise EvaluationError(f"cannot find the dataset variable behind the target of loss layer '{name}'")
        seen.add(current.name)
        current = project.network.layer(current.inputs[0])
    return loss.type, str(input_variable(current, current.params))


# ---------------------------------------------------------------------------------------------- files

def samples_csv_text(result: EvaluationResult) -> str:
    """samples.csv: index, source, target(s), prediction(s), then probabilities or the error."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    if result.task == "classification":
        k = result.outputs.shape[1]
        writer.writerow(["index", "source", "label", "prediction", "correct"] + [f"p_{c}" for c in range(k)])
        labels = result.targets[:, 0].astype(np.int64)
        for i in range(len(labels)):
            pred = int(result.predictions[i])
            writer.writerow([i, result.sources[i], int(labels[i]), pred, int(pred == labels[i])]
                            + [f"{v:.6g}" for v in result.outputs[i]])
    else:
        t = result.targets.shape[1]
        names = ["target", "prediction"] if t == 1 else [f"target__{j}" for j in range(t)] + \
            [f"prediction__{j}" for j in range(t)]
        writer.writerow(["index", "source"] + names + ["abs_error"])
        for i in range(len(result.targets)):
            err = float(np.mean(np.abs(result.predictions[i] - result.targets[i])))
            writer.writerow([i, result.sources[i]] + [f"{v:.6g}" for v in result.targets[i]]
                            + [f"{v:.6g}" for v in result.predictions[i]] + [f"{err:.6g}"])
    return buf.getvalue()


def write_evaluation(result: EvaluationResult, output: Optional[str] = None) -> str:
    """Write samples.csv and metrics.json (each atomically) into ``output``; returns the folder."""
    other = result.dataset if result.metrics.get("split") == "dataset" else None
    folder = output or evaluation_dir(result.run_dir, result.model, other)
    problem = folder_problem(folder)
    if problem:
        raise EvaluationError(f"{problem}; give the evaluation a folder to write into")
    os.makedirs(folder, exist_ok=True)
    atomic_write(os.path.join(folder, SAMPLES_FILE), samples_csv_text(result).encode("utf-8"))
    atomic_write(os.path.join(folder, EVALUATION_METRICS_FILE), metrics_json(result.metrics).encode("utf-8"))
    return folder


def metrics_json(metrics: Dict[str, Any]) -> str:
    """Indented JSON with lists of numbers on one line, so a confusion matrix reads as a matrix."""
    text = json.dumps(metrics, indent=2)
    return re.sub(r"\[\s+([-+\d.eE,\s]+?)\s+\]",
                  lambda m: "[" + ", ".join(v.strip() for v in m.group(1).split(",")) + "]", text) + "\n"


def read_evaluation(folder: str) -> tuple:
    """(metrics dict, list of sample rows as dicts) from a folder written by ``write_evaluation``."""
    with open(os.path.join(folder, EVALUATION_METRICS_FILE), "rb") as fh:
        metrics = safe_json.loads(fh.read())  # ValueError when damaged or nested absurdly deep
    with open(os.path.join(folder, SAMPLES_FILE), newline="") as fh:
        rows = list(csv.DictReader(fh))
    return metrics, rows


def summary_text(metrics: Dict[str, Any]) -> str:
    """A few lines for the terminal: the headline figures and the worst confusions."""
    n = metrics.get("count", 0)
    where = samples_text(metrics)
    if metrics.get("task") == "classification":
        lines = [f"accuracy {metrics['accuracy']:.2%} on {n} {where} "
                 f"({metrics['num_classes']} classes, model {metrics.get('model', '?')})",
                 f"macro precision {metrics['macro_precision']:.4f}  recall {metrics['macro_recall']:.4f}  "
                 f"F-measure {metrics['macro_f_measure']:.4f}"]
        top = metrics.get("top_n_accuracy") or {}
        extra = [f"top-{n_} {v:.2%}" for n_, v in sorted(top.items(), key=lambda kv: int(kv[0])) if n_ != "1"]
        if metrics.get("macro_roc_auc") is not None:
            extra.append(f"macro ROC AUC {metrics['macro_roc_auc']:.4f}")
        if extra:
            lines.append("  ".join(extra))
        worst = metrics.get("top_confusions", [])[:5]
        if worst:
            lines.append("most frequent confusions: " + ", ".join(
                f"{c['true']}->{c['predicted']} ({c['count']})" for c in worst))
        return "\n".join(lines)
    r2 = metrics.get("r2")
    return (f"regression on {n} {where} (model {metrics.get('model', '?')}): MAE {metrics['mae']:.4g}  "
            f"RMSE {metrics['rmse']:.4g}  R^2 {'n/a' if r2 is None else f'{r2:.4f}'}")


def samples_text(metrics: Dict[str, Any]) -> str:
    """'validation samples', or 'samples of <CSV name>' for an evaluation on another dataset."""
    if metrics.get("split") == "dataset":
        return f"samples of {os.path.basename(str(metrics.get('dataset', '')))}"
    return "validation samples"
