"""Evaluate a finished run's model on its validation set or any dataset CSV: per-sample outputs and NNC's metrics.

``evaluate_run`` loads ``<run>/project.yaml`` and ``parameters_best.h5`` or ``parameters_final.h5``,
runs the runtime network (``nnconsole.engine.runtime.nnp.build_runtime``: Softmax head for classifiers) over the
validation set and computes accuracy, the confusion matrix, per-class precision / recall /
F-measure with macro averages and the most frequent confusions; for regression MAE, RMSE and R^2.
``write_evaluation`` stores ``samples.csv`` and ``metrics.json`` atomically under
``<run>/evaluation/<model>/``, which the GUI's EVALUATION tab reads through
:mod:`nnconsole.engine.metrics.results` (the metrics and files without nnabla). No Qt here.
"""
from __future__ import annotations

import os
import time
from typing import Any, Callable, List, Optional

import numpy as np

from nnconsole.engine.metrics.curves import curve_metrics
from nnconsole.engine.project.model import Project
from nnconsole.engine.metrics.results import (EvaluationError, EvaluationResult, classification_metrics, open_run,
                                              probability_columns, regression_metrics, target_variable)
from nnconsole.engine.data.loading import load_dataset, load_dataset_split, validation_batches
from nnconsole.engine.runtime.nnp import build_runtime
from nnconsole.engine.runtime.generated_inputs import fill_generated
from nnconsole.engine.data.generated import generate, stream_key
from nnconsole.engine.network.parameter_files import ParameterFileError
from nnconsole.engine.runtime.checkpoint import CheckpointError, load_parameters_checked
from nnconsole.engine.project.structure import evaluation_view
from nnconsole.engine.layers import get_spec
from nnconsole.engine.data.labels import class_label_variables, project_class_names
from nnconsole.engine.network.shapes import infer_network


# ---------------------------------------------------------------------------------------------- running

def _run_network(project: Project, params_file: str, dataset: Any, batch_size: int,
                 progress: Optional[Callable[[int, int], None]] = None) -> np.ndarray:
    """Runtime-network outputs for every sample of ``dataset``, shape (size, *output shape); ``progress(done,
    total)`` after each batch."""
    import nnabla as nn  # deferred: nnabla stays out of the launcher




    nn.clear_parameters()
    batch = max(1, min(int(batch_size), dataset.size))
    project, passes, how = evaluation_view(project)  # the executor's network, its evaluations (issue 17)
    runtime = build_runtime(project, batch_size=batch)
    try:  # into the parameters the runtime network just created, after checking names and shapes
        load_parameters_checked(params_file, nn.get_parameters(grad_only=False), allow_extra=True)
    except (CheckpointError, ParameterFileError) as exc:
        nn.clear_parameters()
        raise EvaluationError(str(exc)) from None
    missing = [v for v in runtime.inputs if v not in dataset.arrays]
    if missing:
        raise EvaluationError(f"{dataset.path}: no column for the network input(s) {', '.join(missing)}")
    chunks = []
    done = 0
    for idx, valid in validation_batches(dataset.size, batch, 0, 1):  # last batch padded; only `valid` rows count
        for name, var in runtime.inputs.items():
            var.d = dataset.gather(name, idx)  # only this batch's samples become float32
        if runtime.generated:  # NNC's Generator inputs, keyed by the row (the same at every evaluation)
            fill_generated(runtime.generated, project.config.seed, "evaluation", "evaluation", 0, idx)
        outputs = []
        for _ in range(passes):  # Monte-Carlo passes: a Dropout with skip_at_test off draws new masks each time
            runtime.output.forward(clear_buffer=True)
            outputs.append(np.array(runtime.output.d[:valid], dtype=np.float64))
        chunks.append(combine_passes(outputs, how))
        done += valid
        if progress:
            progress(done, dataset.size)
    nn.clear_parameters()
    return np.concatenate(chunks, axis=0)


def combine_passes(outputs: List[np.ndarray], how: str) -> np.ndarray:
    """Several evaluations of one batch as nnabla_cli forward combines them: their mean, the last one, or their
    standard deviation (the spread of Monte-Carlo dropout, an uncertainty)."""
    if how == "last" or len(outputs) == 1 and how != "std":
        return outputs[-1]
    stacked = np.stack(outputs)
    if how == "std":
        return np.nan_to_num(np.sqrt(np.maximum(np.mean(stacked ** 2, axis=0) - np.mean(stacked, axis=0) ** 2, 0)))
    return np.mean(stacked, axis=0)


def _sources(dataset: Any) -> List[str]:
    images = [v for v in dataset.variables if dataset.kinds.get(v) == "image" and v in dataset.files]
    if images:  # the table a person reads: its paths are made here, not kept by the dataset
        return dataset.cells(images[0])
    return [f"row {i + 1}" for i in range(dataset.size)]


def evaluate_run(run_dir: str, model: str = "best", batch_size: Optional[int] = None,
                 dataset: Optional[str] = None,
                 progress: Optional[Callable[[int, int], None]] = None) -> EvaluationResult:
    """Run the ``model`` ('best' or 'final') parameters of ``run_dir`` on its validation set, or on ``dataset``;
    ``progress(done, total)`` is called with the samples evaluated so far after each batch.

    ``dataset`` is any dataset CSV with the network's inputs and its target variable (decoded as the
    project's own data, without writing a decode cache beside it).
    """

    run_dir, project, params_file = open_run(run_dir, model)
    loss_type, label_var = target_variable(project)
    if dataset is None:
        valid = load_dataset_split(project, "validation")
    else:

        if not os.path.isfile(dataset):
            raise EvaluationError(f"{dataset}: no such dataset CSV")
        shapes = {k: tuple(v) for k, v in infer_network(project.network).input_variables.items()}
        valid = load_dataset(dataset, expected_shapes=shapes, normalize=project.datasets.normalize, cache=False,
                             label_classes=class_label_variables(project.network))
    outputs = _run_network(project, params_file, valid, batch_size or min(256, max(project.config.batch_size, 1)),
                           progress)
    outputs = outputs.reshape(valid.size, -1)
    made = infer_network(project.network).generated_variables.get(label_var)
    if made is not None:  # a generated target (a GAN's constant 1): the values its generator gives each row
        targets = generate(made.generator, made.multiplier, made.shape,
                           stream_key(project.config.seed, "evaluation", label_var, "evaluation"),
                           np.arange(valid.size)).reshape(valid.size, -1).astype(np.float64)
    elif label_var not in valid.arrays:
        raise EvaluationError(f"{valid.path}: no column for the target variable '{label_var}'")
    else:
        targets = valid.arrays[label_var].reshape(valid.size, -1).astype(np.float64)

    task = get_spec(loss_type).task or "regression"
    if task == "classification":
        outputs, predictions, labels = _classify(outputs, targets, valid.path, label_var)
        metrics = classification_metrics(labels, predictions, outputs.shape[1])
        metrics.update(curve_metrics(outputs, labels))

        names = project_class_names(project)
        if names:  # labels.txt beside the training CSV: the EVALUATION tab shows them beside the numbers
            metrics["class_names"] = names[:outputs.shape[1]]
    else:
        predictions = outputs
        if predictions.shape != targets.shape:
            raise EvaluationError(f"the network outputs {predictions.shape[1]} value(s) per sample but the target "
                                  f"'{label_var}' has {targets.shape[1]}")
        metrics = regression_metrics(targets, predictions)
    metrics.update({"model": model, "run_dir": run_dir, "parameters": params_file, "dataset": os.path.abspath(valid.path),
                    "split": "validation" if dataset is None else "dataset",
                    "label_variable": label_var, "loss_layer_type": loss_type, "created": time.time()})
    return EvaluationResult(run_dir, model, task, valid.path, label_var, targets, outputs, np.asarray(predictions),
                            _sources(valid), metrics)


def _classify(outputs: np.ndarray, targets: np.ndarray, dataset: str, label_var: str) -> tuple:
    """(probabilities (n, K), predicted class, true class) for single-label classifiers."""
    if targets.shape[1] != 1:
        raise EvaluationError(f"'{label_var}' has {targets.shape[1]} values per sample; evaluation supports one "
                              "class label per sample (multi-label targets are not supported yet)")
    labels = targets[:, 0]
    if not np.all(labels == np.round(labels)):
        raise EvaluationError(f"{dataset}: the label variable '{label_var}' holds non-integer values; a "
                              "classifier's labels must be class numbers 0, 1, 2 ...")
    labels = labels.astype(np.int64)
    outputs = probability_columns(outputs)
    k = outputs.shape[1]
    bad = np.flatnonzero((labels < 0) | (labels >= k))
    if bad.size:
        raise EvaluationError(f"{dataset} row {bad[0] + 1}: label {labels[bad[0]]} of '{label_var}' is outside the "
                              f"network's {k} classes (0..{k - 1}); fix the label or the output layer's size")
    return outputs, np.argmax(outputs, axis=1), labels
