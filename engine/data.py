"""Loading an NNC-format dataset CSV for training: the public entry points (``load_dataset``,
``check_dataset``, ``peek_csv``, ``class_histogram``) and the batch order, built from one module per job:

- :mod:`nnconsole.engine.dataset_csv`: reading the CSV and its header, :class:`DatasetError`;
- :mod:`nnconsole.engine.dataset_decode`: image decoding and numeric columns, checked against shapes;
- :mod:`nnconsole.engine.dataset_cache`: the decode cache;
- :mod:`nnconsole.engine.batching`: the epoch order and each worker's batches.
"""
from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from nnconsole.engine.batching import epoch_order, validation_batches, worker_batches
from nnconsole.engine.dataset_cache import (CACHE_FOLDER, CACHE_VERSION, _cache_dirs, _cache_key, _cache_prefix,
                                            _cache_read, _cache_write)
from nnconsole.engine.dataset_csv import (IMAGE_EXTENSIONS, CsvPreview, DatasetError, PathLike, _err, _looks_like_image,
                                          _read_table, _Table, _Var, peek_csv)
from nnconsole.engine.dataset_decode import _image_files, _image_target, _load_images, _load_numbers

if TYPE_CHECKING:
    from nnconsole.engine.project.model import Project

__all__ = ["CACHE_FOLDER", "CACHE_VERSION", "IMAGE_EXTENSIONS", "CsvPreview", "Dataset", "DatasetError", "PathLike",
           "check_dataset", "class_histogram", "epoch_order", "load_dataset", "load_dataset_split", "load_datasets",
           "peek_csv", "validation_batches",
           "worker_batches"]


@dataclass
class Dataset:
    """A loaded dataset: one float32 array of shape (size, *shape) per variable, in header order.

    ``kinds`` says ``"image"`` or ``"numeric"`` per variable; ``sources`` keeps the CSV cells of
    image variables (the relative paths) so that evaluation tables can show them.
    """

    path: str
    variables: List[str]
    arrays: Dict[str, np.ndarray]
    size: int
    kinds: Dict[str, str] = field(default_factory=dict)
    sources: Dict[str, List[str]] = field(default_factory=dict)

    @property
    def shapes(self) -> Dict[str, Tuple[int, ...]]:
        """Per-variable sample shape, batch dimension excluded (NNC style)."""
        return {v: tuple(self.arrays[v].shape[1:]) for v in self.variables}



# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------

def _prepare(table: _Table, expected: Dict[str, Tuple[int, ...]], base: Path, root: Optional[str] = None,
             label_classes: Optional[Mapping[str, int]] = None) -> Tuple[
        Dict[str, List[Tuple[Path, os.stat_result]]], Dict[str, Optional[Tuple[int, int, int]]], Dict[str, np.ndarray]]:
    """Every check that needs no image decoding: rows, variables, image files present, numbers.

    Returns (image files per image variable, image target per image variable, numeric arrays).
    """
    shown = table.shown
    if not table.rows:
        raise _err(shown, 2, None, "the CSV has a header but no data rows; add one line per sample")
    by_name = {v.name: v for v in table.variables}
    for name in expected:
        if name not in by_name:
            raise _err(shown, 1, None, f"the header has no variable '{name}' (the network's Input layer '{name}' "
                       f"needs it; the header names {', '.join(by_name)}); add a '{name}' column or change the "
                       "Input layer's variable")
    files: Dict[str, List[Tuple[Path, os.stat_result]]] = {}
    targets: Dict[str, Optional[Tuple[int, int, int]]] = {}
    for var in table.variables:
        first = next((r[var.columns[0]] for r in table.rows if r[var.columns[0]].strip()), "")
        if var.plain and _looks_like_image(first):
            var.kind = "image"
            targets[var.name] = _image_target(var, expected.get(var.name), shown)
            files[var.name] = _image_files(table, var, base, root)
    # Numeric columns are parsed every time (cheap) so their errors never hide behind a cache hit.
    numeric = {v.name: _load_numbers(table, v, expected.get(v.name)) for v in table.variables
               if v.kind == "numeric"}
    for var in table.variables:
        if label_classes and var.name in label_classes:
            _check_labels(table, var, numeric.get(var.name), int(label_classes[var.name]))
    return files, targets, numeric


def _check_labels(table: _Table, var: _Var, values: Optional[np.ndarray], classes: int) -> None:
    """Every value of a class-label variable is a class index (nnconsole.engine.labels), else a located error."""
    from nnconsole.engine.labels import first_bad_label, label_rule_text

    if values is None:
        raise _err(table.shown, 1, var.name, f"'{var.name}' holds file paths, but the network reads it as class "
                   f"labels; {label_rule_text(classes)}")
    bad = first_bad_label(values, classes)
    if bad is not None:
        sample, index, problem = bad
        column = var.columns[index]
        raise _err(table.shown, table.lines[sample], table.names[column],
                   f"class label '{table.rows[sample][column].strip()}' {problem}: {label_rule_text(classes)}")


def check_dataset(csv_path: PathLike, expected_shapes: Optional[Mapping[str, Sequence[int]]] = None,
                  confine_to: Optional[PathLike] = None, label_classes: Optional[Mapping[str, int]] = None
                  ) -> CsvPreview:
    """Check a dataset as ``load_dataset`` would, except decoding images; returns a preview without rows.

    Reads every row and number and checks that every image file exists, so ``nnconsole validate``
    and ``train`` report a bad dataset (file, line, column, fix) before any worker starts. With
    ``confine_to`` (the project's folder) image paths that lead outside it are refused;
    ``label_classes`` as for ``load_dataset``. Raises :class:`DatasetError`.
    """
    table = _read_table(csv_path)
    expected = {str(k): tuple(int(s) for s in v) for k, v in (expected_shapes or {}).items()}
    root = os.path.normpath(os.path.abspath(os.fspath(confine_to))) if confine_to is not None else None
    _prepare(table, expected, Path(csv_path).parent, root, label_classes)
    return CsvPreview(table.shown, table.columns, [v.name for v in table.variables], len(table.rows), [])


def load_dataset(csv_path: PathLike, expected_shapes: Optional[Mapping[str, Sequence[int]]] = None,
                 normalize: bool = True, cache: bool = True, cache_dir: Optional[PathLike] = None,
                 label_classes: Optional[Mapping[str, int]] = None) -> Dataset:
    """Load an NNC dataset CSV into float32 arrays, checking them against the network's Input shapes.

    ``expected_shapes`` maps variable name -> sample shape from the Input layers (batch dim excluded);
    each must exist in the CSV and match (image H x W, vector length). Images become (C, H, W), grey
    or RGB as the expected channel count says, divided by 255 when ``normalize``. With ``cache`` the
    decoded arrays of image datasets are kept in ``<csv folder>/.nnconsole-cache/`` (or
    ``~/.cache/nnconsole/datasets/``, or ``cache_dir``) keyed by the CSV bytes, the referenced files'
    mtimes and sizes, ``normalize`` and the expected shapes; a hit decodes nothing.
    ``label_classes`` maps each class-label variable to its class count (``nnconsole.engine.labels``): every
    value must be a whole number from 0 to count - 1. Raises :class:`DatasetError` on any problem.
    """
    table = _read_table(csv_path)
    shown = table.shown
    expected = {str(k): tuple(int(s) for s in v) for k, v in (expected_shapes or {}).items()}
    files, targets, numeric = _prepare(table, expected, Path(csv_path).parent, label_classes=label_classes)
    variables = [v.name for v in table.variables]
    kinds = {v.name: v.kind for v in table.variables}
    sources = {v.name: [row[v.columns[0]].strip() for row in table.rows] for v in table.variables
               if v.kind == "image"}

    use_cache = cache and bool(files)
    name = prefix = ""
    dirs: List[Path] = []
    if use_cache:
        all_files = [f for v in variables if v in files for f in files[v]]
        prefix = _cache_prefix(Path(csv_path))
        name = prefix + _cache_key(table, all_files, normalize, expected)[:32] + ".npz"
        dirs = _cache_dirs(Path(csv_path), cache_dir)
        hit = _cache_read(dirs, name, variables, len(table.rows))
        if hit is not None:
            return Dataset(shown, variables, hit, len(table.rows), kinds, sources)

    arrays: Dict[str, np.ndarray] = {}
    for var in table.variables:
        if var.kind == "image":
            arrays[var.name] = _load_images(table, var, files[var.name], targets[var.name], normalize)
        else:
            arrays[var.name] = numeric[var.name]
    if use_cache:
        _cache_write(dirs, prefix, name, variables, arrays)
    return Dataset(shown, variables, arrays, len(table.rows), kinds, sources)



def class_histogram(dataset: Dataset, variable: str) -> Dict[int, int]:
    """Sample count per integer class of a label variable (one value per sample), sorted by class."""
    if variable not in dataset.arrays:
        raise KeyError(f"{dataset.path}: no variable '{variable}' (variables: {', '.join(dataset.variables)})")
    values = dataset.arrays[variable].reshape(dataset.size, -1)
    if values.shape[1] != 1:
        raise ValueError(f"{dataset.path}: variable '{variable}' has {values.shape[1]} values per sample; "
                         "a class histogram needs one label per sample")
    labels = values[:, 0]
    if not np.all(labels == np.round(labels)):
        raise ValueError(f"{dataset.path}: variable '{variable}' holds non-integer values; it is not a class "
                         "label")
    counts = Counter(int(v) for v in labels)
    return dict(sorted(counts.items()))


def _expected_shapes(project: "Project") -> Dict[str, tuple]:
    from nnconsole.engine.project.structure import dataset_variables
    return dataset_variables(project)  # Main's Inputs and those of every network an optimizer trains


def load_dataset_split(project: "Project", which: str, shapes: Optional[Dict[str, tuple]] = None) -> Any:
    """The ``which`` ('training' or 'validation') dataset with the shapes the Input layers declare."""
    from nnconsole.engine.labels import class_label_variables
    from nnconsole.engine.project.validate import dataset_path

    if which not in ("training", "validation"):
        raise ValueError(f"unknown dataset split {which!r}; expected 'training' or 'validation'")
    ds = project.datasets
    return load_dataset(dataset_path(project, getattr(ds, which)),
                        expected_shapes=_expected_shapes(project) if shapes is None else shapes,
                        normalize=ds.normalize, cache=ds.cache, label_classes=class_label_variables(project.network))


def load_datasets(project: "Project") -> tuple:
    """Training and validation datasets with the shapes the Input layers declare."""
    shapes = _expected_shapes(project)
    return load_dataset_split(project, "training", shapes), load_dataset_split(project, "validation", shapes)
