"""Loading an NNC-format dataset CSV for training: the public entry points (``load_dataset``,
``check_dataset``, ``peek_csv``, ``class_histogram``) and the batch order, built from one module per job:

- :mod:`nnconsole.engine.data.csv_reader`: reading the CSV and its header, :class:`DatasetError`;
- :mod:`nnconsole.engine.data.decode`: image decoding (uint8) and numeric columns, checked against shapes;
- :mod:`nnconsole.engine.data.cache`, :mod:`nnconsole.engine.data.cache_build`: the shared uint8 cache that every
  worker memory-maps, built by a process pool;
- :mod:`nnconsole.engine.data.batching`: the epoch order and each worker's batches.

Images stay uint8 (memory-mapped when cached) and become float32 per batch (``Dataset.gather``), so a
worker's memory does not grow with the dataset.
"""
from __future__ import annotations

import functools
import mmap
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from nnconsole.engine.data.batching import epoch_order, validation_batches, worker_batches
from nnconsole.engine.data.cache_build import DatasetBuildStopped, ImageJob, ProgressFn, StopFn, cached_images
from nnconsole.engine.data.cache import (CACHE_FOLDER, CACHE_VERSION, _cache_dirs, _cache_key, _cache_prefix,
                                         variable_file)
from nnconsole.engine.data.csv_reader import (IMAGE_EXTENSIONS, CsvPreview, DatasetError, PathLike, _err,
                                              _looks_like_image, _read_table, _Table, _Var, peek_csv)
from nnconsole.engine.data.mapped_pages import MappedPages
from nnconsole.engine.data.matrix import load_matrices, looks_like_matrix
from nnconsole.engine.data.decode import (_image_files, _image_layout, _image_target, _load_images, _load_numbers,
                                          image_problem)
from nnconsole.engine.data.labels import class_label_variables, first_bad_label, label_rule_text
from nnconsole.engine.network.data_flow import dataset_variables
from nnconsole.engine.project.paths import dataset_path
from nnconsole.engine.rundir.protocol import DATASET_CACHE, DatasetCacheRecord

if TYPE_CHECKING:
    from nnconsole.engine.project.model import Project

__all__ = ["CACHE_FOLDER", "CACHE_VERSION", "IMAGE_EXTENSIONS", "CsvPreview", "Dataset", "DatasetBuildStopped",
           "DatasetError", "PathLike",
           "check_dataset", "class_histogram", "epoch_order", "load_dataset", "load_dataset_split", "load_datasets",
           "peek_csv", "validation_batches",
           "worker_batches"]


IMAGE_SCALE = np.float32(255.0)  # normalised images are uint8 / 255 in float32, as NNC divides them


@dataclass
class Dataset:
    """A loaded dataset: per variable, ``size`` samples of one shape, in header order.

    Image variables stay uint8 in ``images`` (read-only memory maps of the shared cache, or in memory when
    uncached); numeric ones are float32 in ``numbers``. ``gather`` makes a float32 batch (divided by 255
    when ``normalize``); ``arrays`` gives whole float32 arrays for small uses (it materialises images).
    ``kinds`` says ``"image"`` or ``"numeric"``; ``sources`` keeps the CSV cells of image variables.
    """

    path: str
    variables: List[str]
    size: int
    numbers: Dict[str, np.ndarray]
    images: Dict[str, np.ndarray] = field(default_factory=dict)
    normalize: bool = True
    kinds: Dict[str, str] = field(default_factory=dict)
    sources: Dict[str, List[str]] = field(default_factory=dict)

    @property
    def shapes(self) -> Dict[str, Tuple[int, ...]]:
        """Per-variable sample shape, batch dimension excluded (NNC style)."""
        return {v: tuple(self._source(v).shape[1:]) for v in self.variables}

    def _source(self, name: str) -> np.ndarray:
        if name in self.images:
            return self.images[name]
        if name in self.numbers:
            return self.numbers[name]
        raise KeyError(f"{self.path}: no variable '{name}' (variables: {', '.join(self.variables)})")

    def gather(self, name: str, indices: Any, out: Optional[np.ndarray] = None) -> np.ndarray:
        """The float32 samples ``indices`` of ``name``, written into ``out`` when its shape and dtype fit.

        Reads only those samples of a memory-mapped cache; images are converted (and normalised) here,
        per batch, with the same float32 arithmetic as a whole-array conversion, so results are bit-identical.
        """
        source = self._source(name)
        indices = np.asarray(indices, dtype=np.int64)
        shape = (len(indices),) + source.shape[1:]
        if out is None or out.shape != shape or out.dtype != np.float32:
            out = np.empty(shape, dtype=np.float32)
        if name not in self.images:
            return np.take(source, indices, axis=0, out=out)
        _will_need(source, indices)
        pixels = np.take(source, indices, axis=0)
        self._pages.gathered(source, len(indices))
        if self.normalize:
            np.divide(pixels, IMAGE_SCALE, out=out, dtype=np.float32)
        else:
            np.copyto(out, pixels, casting="unsafe")
        return out

    def batch(self, names: Sequence[str], indices: Any) -> Dict[str, np.ndarray]:
        """One float32 batch per variable in ``names`` (what the prefetcher prepares ahead of training)."""
        return {name: self.gather(name, indices) for name in names}

    @property
    def arrays(self) -> "FloatArrays":
        """Whole float32 arrays per variable (images materialised on first access; training uses ``gather``)."""
        if self._whole is None:
            self._whole = FloatArrays(self)
        return self._whole

    _whole: Optional["FloatArrays"] = field(default=None, repr=False, compare=False)
    _pages: MappedPages = field(default_factory=MappedPages, repr=False, compare=False)


WILL_NEED_MIN_ROW = 2048  # bytes per sample from which a batch's reads are announced (not the digits' 64)


def _will_need(source: np.ndarray, indices: np.ndarray) -> None:
    """Tell the kernel which samples the batch reads, in file order, before the gather touches them.

    Where the cache is not in the page cache (larger than memory), the kernel then reads the whole
    batch at once instead of one page fault after another: measured 17-36 ms instead of 1.4-1.7 s per
    batch of 64 x 49 kB from a 1 GB cache in a 256 MB cgroup. A no-op for pages already cached.
    """
    mapped = getattr(source, "_mmap", None)
    row = source.strides[0] if source.ndim else 0
    if mapped is None or row < WILL_NEED_MIN_ROW or not hasattr(mmap, "MADV_WILLNEED"):
        return
    base = int(getattr(source, "offset", 0)) % mmap.ALLOCATIONGRANULARITY  # where the array starts in the map
    try:
        for i in np.unique(indices):  # sorted: one ascending pass over the file
            start = base + int(i) * row
            aligned = start - start % mmap.PAGESIZE
            mapped.madvise(mmap.MADV_WILLNEED, aligned, start + row - aligned)
    except (OSError, ValueError):
        pass


class FloatArrays(Mapping):
    """``Dataset.arrays``: variable -> whole float32 array, an image variable materialised once when read."""

    def __init__(self, dataset: Dataset) -> None:
        self._dataset = dataset
        self._made: Dict[str, np.ndarray] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        ds = self._dataset
        if name in ds.numbers:
            return ds.numbers[name]
        if name not in ds.images:
            raise KeyError(name)
        if name not in self._made:
            self._made[name] = ds.gather(name, np.arange(ds.size))
        return self._made[name]

    def __contains__(self, name: object) -> bool:
        return name in self._dataset.numbers or name in self._dataset.images

    def __iter__(self) -> Iterator[str]:
        return iter(self._dataset.variables)

    def __len__(self) -> int:
        return len(self._dataset.variables)


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------

def _prepare(table: _Table, expected: Dict[str, Tuple[int, ...]], base: Path, root: Optional[str] = None,
             label_classes: Optional[Mapping[str, int]] = None) -> Tuple[
        Dict[str, List[Tuple[str, Tuple[int, int]]]], Dict[str, Optional[Tuple[int, int, int]]], Dict[str, np.ndarray]]:
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
    files: Dict[str, List[Tuple[str, Tuple[int, int]]]] = {}
    targets: Dict[str, Optional[Tuple[int, int, int]]] = {}
    for var in table.variables:
        first = next((r[var.columns[0]] for r in table.rows if r[var.columns[0]].strip()), "")
        if var.plain and _looks_like_image(first):
            var.kind = "image"
            targets[var.name] = _image_target(var, expected.get(var.name), shown)
            files[var.name] = _image_files(table, var, base, root)
        elif var.plain and looks_like_matrix(first):  # NNC's sequences: a .csv matrix per sample
            var.kind = "matrix"
    # Numeric columns are parsed every time (cheap) so their errors never hide behind a cache hit.
    numeric = {v.name: _load_numbers(table, v, expected.get(v.name)) for v in table.variables
               if v.kind == "numeric"}
    numeric.update({v.name: load_matrices(table, v, base, expected.get(v.name), root) for v in table.variables
                    if v.kind == "matrix"})
    for var in table.variables:
        if label_classes and var.name in label_classes:
            _check_labels(table, var, numeric.get(var.name), int(label_classes[var.name]))
    return files, targets, numeric


def _check_labels(table: _Table, var: _Var, values: Optional[np.ndarray], classes: int) -> None:
    """Every value of a class-label variable is a class index (nnconsole.engine.data.labels), else a located error."""

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
                 label_classes: Optional[Mapping[str, int]] = None, progress: Optional[ProgressFn] = None,
                 build_workers: Optional[int] = None, stop: Optional[StopFn] = None) -> Dataset:
    """Load an NNC dataset CSV, checking it against the network's Input shapes.

    ``expected_shapes`` maps variable name -> sample shape from the Input layers (batch dim excluded);
    each must exist in the CSV and match (image H x W, vector length). Images become uint8 (C, H, W), grey
    or RGB as the expected channel count says; batches are float32, divided by 255 when ``normalize``.
    With ``cache`` the decoded images are kept in ``<csv folder>/.nnconsole-cache/`` (or
    ``~/.cache/nnconsole/datasets/``, or ``cache_dir``) keyed by the CSV bytes, the referenced files'
    mtimes and sizes and the expected shapes, and memory-mapped: a hit decodes nothing, and every
    worker on the host shares one copy. A build decodes with ``build_workers`` processes (default: all
    cores) and reports ``progress(done, total, eta_seconds)``; when ``stop()`` turns True it ends within about a
    second with DatasetBuildStopped, and the next load resumes it.
    ``label_classes`` maps each class-label variable to its class count (``nnconsole.engine.data.labels``): every
    value must be a whole number from 0 to count - 1. Raises :class:`DatasetError` on any problem.
    """
    table = _read_table(csv_path)
    shown = table.shown
    expected = {str(k): tuple(int(s) for s in v) for k, v in (expected_shapes or {}).items()}
    files, targets, numeric = _prepare(table, expected, Path(csv_path).parent, label_classes=label_classes)
    variables = [v.name for v in table.variables]
    image_vars = [v for v in table.variables if v.kind == "image"]
    kinds = {v.name: v.kind for v in table.variables}
    sources = {v.name: [row[v.columns[0]].strip() for row in table.rows] for v in image_vars}

    def jobs() -> List[ImageJob]:
        return [ImageJob(v.name, variable_file(i), [str(p) for p, _ in files[v.name]],
                         _image_layout(table, v, files[v.name], targets[v.name]))
                for i, v in enumerate(image_vars)]

    images: Optional[Dict[str, np.ndarray]] = None
    if cache and image_vars:
        all_files = [f for v in variables if v in files for f in files[v]]
        key = _cache_key(table, all_files, expected)
        images, failure = cached_images(_cache_dirs(Path(csv_path), cache_dir), _cache_prefix(Path(csv_path)), key,
                                        len(table.rows), [v.name for v in image_vars], jobs, progress,
                                        build_workers, stop)
        if failure is not None:
            var = next(v for v in image_vars if v.name == failure[0])
            layout = _image_layout(table, var, files[var.name], targets[var.name])
            raise image_problem(table, var, layout, targets[var.name], *failure[1:])
    if images is None:
        images = {v.name: _load_images(table, v, files[v.name], targets[v.name]) for v in image_vars}
    return Dataset(shown, variables, len(table.rows), numeric, images, normalize, kinds, sources)



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


def _expected_shapes(project: "Project", which: str) -> Dict[str, tuple]:
    return dataset_variables(project, which)  # the Inputs this split feeds (network.data_flow): each its own shapes


def load_dataset_split(project: "Project", which: str, shapes: Optional[Dict[str, tuple]] = None,
                       progress: Optional[ProgressFn] = None, stop: Optional[StopFn] = None) -> Any:
    """The ``which`` ('training' or 'validation') dataset with the shapes the Input layers declare."""

    if which not in ("training", "validation"):
        raise ValueError(f"unknown dataset split {which!r}; expected 'training' or 'validation'")
    ds = project.datasets
    return load_dataset(dataset_path(project, getattr(ds, which)),
                        expected_shapes=_expected_shapes(project, which) if shapes is None else shapes,
                        normalize=ds.normalize, cache=ds.cache, label_classes=class_label_variables(project.network),
                        progress=progress, stop=stop)


def load_datasets(project: "Project", progress: Optional[Callable[[str, int, int, Optional[float]], None]] = None,
                  stop: Optional[StopFn] = None) -> tuple:
    """Training and validation datasets with the shapes the Input layers declare.

    ``progress(split, done, total, eta)`` follows a cache build (see ``cache_progress_records``); ``stop`` as
    for ``load_dataset``.
    """
    return tuple(load_dataset_split(project, which, None,
                                    None if progress is None else functools.partial(progress, which), stop)
                 for which in ("training", "validation"))


def cache_progress_records(write: Callable[[Dict[str, Any]], None], every_s: float = 0.5
                           ) -> Callable[[str, int, int, Optional[float]], None]:
    """A ``load_datasets`` progress callback writing ``dataset_cache`` run records (at most every ``every_s``
    seconds, and always the first and the last), which the CLI and the GUI's TRAINING tab show."""

    last = {"t": 0.0}

    def report(split: str, done: int, total: int, eta: Optional[float]) -> None:
        now = time.monotonic()
        if done not in (0, total) and now - last["t"] < every_s:
            return
        last["t"] = now
        write(DatasetCacheRecord(type=DATASET_CACHE, dataset=split, done=int(done), total=int(total),
                                 eta=None if eta is None else float(eta)))
    return report
