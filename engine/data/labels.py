"""Class labels: which dataset variables a network reads as class indices, and which values fit.

Losses registered with ``class_index_target`` (SoftmaxCrossEntropy, CategoricalCrossEntropy) read their
target as an integer class index into
the prediction's class axis. nnabla does not check it: a label outside 0..C-1 or a fraction
trains to "finished" on garbage, and a huge one (1e8) reads far outside the prediction and
crashes the worker (SIGSEGV). The dataset loader checks every label against these rules.

Classes can have names: ``labels.txt`` beside the training dataset CSV, one name a line (class 0
first); ``nnconsole infer``, ``nnconsole evaluate`` and the EVALUATION tab show them beside the
class numbers.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import numpy as np

import os
from nnconsole.engine.project.model import Network, Project
from nnconsole.engine.layers.types.inputs import input_variable
from nnconsole.engine.layers.registry import find_spec, norm_axis
from nnconsole.engine.network.shapes import infer_network
from nnconsole.engine.project.paths import dataset_path


def class_label_variables(network: Network) -> Dict[str, int]:
    """Dataset variable -> number of classes, for each Input that feeds a class-index loss's target.

    The count is the size of the loss's prediction along its class axis. A target computed by other
    layers (not read straight from an Input) is not a dataset column, so it has no entry; a
    variable read by several such losses gets the smallest count.
    """

    info = infer_network(network)
    by_name = {layer.name: layer for layer in network.layers}
    found: Dict[str, int] = {}
    for name in info.loss_layers:
        loss = by_name.get(name)
        loss_info = info.layers.get(name)
        if loss is None or loss_info is None or len(loss.inputs) != 2 or not _class_index_loss(loss.type):
            continue
        prediction = info.layers.get(loss.inputs[0])
        target, target_info = by_name.get(loss.inputs[1]), info.layers.get(loss.inputs[1])
        if prediction is None or prediction.out_shape is None or target is None or target.type != "Input" \
                or target_info is None or not loss_info.params:
            continue
        shape = prediction.out_shape
        classes = int(shape[norm_axis(loss_info.params.get("axis", -1), len(shape))])
        variable = input_variable(target, target_info.params)
        found[variable] = min(classes, found.get(variable, classes))
    return found


def first_bad_label(values: np.ndarray, classes: int) -> Optional[Tuple[int, int, str]]:
    """(sample, value index within the sample, problem) of the first label that is not a class index.

    ``values`` has one row per sample; a label must be a whole number from 0 to ``classes`` - 1.
    """
    flat = values.reshape(len(values), -1)
    whole = np.floor(flat) == flat
    inside = (flat >= 0) & (flat <= classes - 1)
    bad = ~(whole & inside)
    if not bad.any():
        return None
    sample, index = (int(i) for i in np.argwhere(bad)[0])
    if not whole[sample, index]:
        problem = "is not a whole number"
    else:
        problem = "is outside the network's classes"
    return sample, index, problem


def label_rule_text(classes: int) -> str:
    """The valid labels, as the error messages say it."""
    return (f"class labels are whole numbers from 0 to {classes - 1} (the classifier's prediction has {classes} "
            "classes); fix the label, or give the layer before the loss as many outputs as there are classes")


def _class_index_loss(type_name: str) -> bool:
    spec = find_spec(type_name)
    return spec is not None and spec.class_index_target


CLASS_NAMES_FILE = "labels.txt"  # beside the training dataset CSV: one class name a line, class 0 first
MAX_CLASS_NAME = 200


def read_class_names(path: str) -> List[str]:
    """Class names from a text file, one a line (line 1 names class 0); blank lines at the end are dropped.

    A name is cut to 200 characters and loses control characters, so a hostile file cannot break a
    results CSV or the GUI's table. Raises OSError when the file cannot be read.
    """
    with open(path, encoding="utf-8", errors="replace") as fh:
        lines = fh.read(1 << 20).splitlines()
    names = ["".join(ch for ch in line.strip() if ch.isprintable())[:MAX_CLASS_NAME] for line in lines]
    while names and not names[-1]:
        names.pop()
    return names


def project_class_names(project: Project) -> List[str]:
    """The class names of a project: ``labels.txt`` beside its training dataset CSV, or [] when there is none."""


    if not project.datasets.training:
        return []
    path = os.path.join(os.path.dirname(dataset_path(project, project.datasets.training)), CLASS_NAMES_FILE)
    try:
        return read_class_names(path) if os.path.isfile(path) else []
    except OSError:
        return []


def class_name(names: List[str], index: int) -> str:
    """The name of class ``index``, or its number when the names do not cover it."""
    return names[index] if 0 <= index < len(names) and names[index] else str(index)
