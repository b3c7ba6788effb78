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

from nnconsole.engine.data.build_follow import FollowedState
from nnconsole.engine.data.build_overlap import BuildingImages
from nnconsole.engine.data.batching import epoch_order, first_needed_order, validation_batches, worker_batches
from nnconsole.engine.data.cache_build import DatasetBuildStopped, ProgressFn, StopFn
from nnconsole.engine.data.build_pool import STOP_POLL_S
from nnconsole.engine.data.cache import CACHE_FOLDER, CACHE_VERSION
from nnconsole.engine.data.csv_reader import IMAGE_EXTENSIONS, CsvPreview, DatasetError, PathLike
from nnconsole.engine.data.csv_stream import _version as csv_version
from nnconsole.engine.data.csv_stream import header_csv, peek_csv, remember_count
from nnconsole.engine.data.dataset_entry import cached_index, decode_in_memory
from nnconsole.engine.data.index import FileTable, build_index
from nnconsole.engine.data.labels import class_label_variables
from nnconsole.engine.data.mapped_pages import MappedPages
from nnconsole.engine.data.on_the_fly import OnDemandImages
from nnconsole.engine.network.data_flow import dataset_variables
from nnconsole.engine.project.paths import dataset_path
from nnconsole.engine.rundir.protocol import DATASET_CACHE, DatasetCacheRecord

if TYPE_CHECKING:
    from nnconsole.engine.project.model import Project

__all__ = ["CACHE_FOLDER", "CACHE_VERSION", "IMAGE_EXTENSIONS", "CsvPreview", "Dataset", "DatasetBuildStopped", "build_after",
           "build_note", "building_note",
           "DatasetError", "PathLike",
           "check_dataset", "class_histogram", "header_csv", "epoch_order", "first_needed_order", "load_dataset",
           "load_dataset_split", "load_datasets",
           "peek_csv", "validation_batches",
           "worker_batches"]


IMAGE_SCALE = np.float32(255.0)  # normalised images are uint8 / 255 in float32, as NNC divides them


@dataclass
class Dataset:
    """A loaded dataset: per variable, ``size`` samples of one shape, in header order.

    Image variables stay uint8 in ``images``, one sample per distinct file (read-only memory maps of the shared
    cache, or in memory when uncached), and ``row_files`` maps each row to its file (uint32; none: row i is
    sample i); numeric ones are float32 in ``numbers`` (memory-mapped from the cache entry too). ``gather`` makes
    a float32 batch (divided by 255 when ``normalize``); ``arrays`` gives whole float32 arrays for small uses
    (it materialises images). ``kinds`` says ``"image"``, ``"numeric"`` or ``"matrix"``; ``cells(name)`` gives
    the CSV cells of an image variable, made when asked (the evaluation table), never kept.
    """

    path: str
    variables: List[str]
    size: int
    numbers: Dict[str, np.ndarray]
    images: Dict[str, np.ndarray] = field(default_factory=dict)
    normalize: bool = True
    kinds: Dict[str, str] = field(default_factory=dict)
    row_files: Dict[str, np.ndarray] = field(default_factory=dict)
    files: Dict[str, FileTable] = field(default_factory=dict)

    def cells(self, name: str) -> List[str]:
        """The CSV cell (stripped) of every row of the image variable ``name``, in row order: the cell that first
        names the row's file (a row spelling the same file another way, ``./a.png`` for ``a.png``, shows the first)."""
        table = self.files[name]
        names = [table.cell(i) for i in range(len(table))]
        return [names[int(i)] for i in self.row_files[name]]

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
        rows = self.row_files.get(name)
        if rows is not None:  # a row's sample is its distinct file's
            indices = rows[indices].astype(np.int64)
        if isinstance(source, OnDemandImages):  # over the cache's disk budget: decoded by the decode processes
            pixels = source.take(indices)
        elif isinstance(source, BuildingImages):  # the cache still being built (a cold start's first epoch):
            pixels = source.take(indices)  # waits for the chunks holding these files
            self._pages.gathered(source.array, len(indices))
        else:
            _will_need(source, indices)
            pixels = np.take(source, indices, axis=0)
            self._pages.gathered(source, len(indices))
        if self.normalize:
            np.divide(pixels, IMAGE_SCALE, out=out, dtype=np.float32)
        else:
            np.copyto(out, pixels, casting="unsafe")
        return out

    def start(self, names: Sequence[str], indices: Any) -> None:
        """Announce a batch that ``batch`` will be asked for soon: images decoded on the fly start decoding now,
        in the decode processes (a no-op for cached images)."""
        for name in names:
            source = self.images.get(name)
            if isinstance(source, OnDemandImages):
                files = np.asarray(indices, dtype=np.int64)
                rows = self.row_files.get(name)
                source.start(rows[files].astype(np.int64) if rows is not None else files)

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

def _expected(expected_shapes: Optional[Mapping[str, Sequence[int]]]) -> Dict[str, Tuple[int, ...]]:
    return {str(k): tuple(int(s) for s in v) for k, v in (expected_shapes or {}).items()}


def check_dataset(csv_path: PathLike, expected_shapes: Optional[Mapping[str, Sequence[int]]] = None,
                  confine_to: Optional[PathLike] = None, label_classes: Optional[Mapping[str, int]] = None
                  ) -> CsvPreview:
    """Check a dataset as ``load_dataset`` would, except decoding images; returns a preview without rows.

    One streamed pass (``index``): the header, every row and number, the labels' range, and one check per
    distinct image file that it exists, so ``nnconsole validate`` and ``train`` report a bad dataset (file, line,
    column, fix) before any worker starts; the preview's row count comes from the same pass. With
    ``confine_to`` (the project's folder) image paths that lead outside it are refused; ``label_classes`` as
    for ``load_dataset``. Raises :class:`DatasetError`.
    """
    root = os.path.normpath(os.path.abspath(os.fspath(confine_to))) if confine_to is not None else None
    version = csv_version(csv_path)
    index, _, _ = build_index(csv_path, _expected(expected_shapes), root, label_classes)
    preview = CsvPreview(index.shown, index.columns, list(index.variables), index.size, [])
    remember_count(csv_path, preview, version)  # the launcher's plan then counts no rows again
    return preview


def load_dataset(csv_path: PathLike, expected_shapes: Optional[Mapping[str, Sequence[int]]] = None,
                 normalize: bool = True, cache: bool = True, cache_dir: Optional[PathLike] = None,
                 label_classes: Optional[Mapping[str, int]] = None, progress: Optional[ProgressFn] = None,
                 build_workers: Optional[int] = None, stop: Optional[StopFn] = None,
                 cache_budget: float = 0.0, first_order: Optional[Callable[[int], np.ndarray]] = None,
                 after: Optional[Callable[[], None]] = None) -> Dataset:
    """Load an NNC dataset CSV, checking it against the network's Input shapes.

    ``expected_shapes`` maps variable name -> sample shape from the Input layers (batch dim excluded);
    each must exist in the CSV and match (image H x W, vector length). Images become uint8 (C, H, W), grey
    or RGB as the expected channel count says; batches are float32, divided by 255 when ``normalize``.
    With ``cache`` the dataset's index (row-to-file indices, numeric columns) and one decoded sample per
    distinct image file are kept in ``<csv folder>/.nnconsole-cache/`` (or ``~/.cache/nnconsole/datasets/``, or
    ``cache_dir``) keyed by the CSV's content and the expected shapes and labels, the files' mtimes and sizes
    held in it, and memory-mapped: a hit parses and decodes nothing (one stat per distinct file), and every
    worker on the host shares one copy. A build decodes with ``build_workers`` processes (default: all
    cores) and reports ``progress(done, total, eta_seconds)``; when ``stop()`` turns True it ends within about a
    second with DatasetBuildStopped, and the next load resumes it. When the decoded images would take more disk
    than ``cache_budget`` (GB; 0: 80% of the cache folder's free space) only the index is cached and each batch's
    images are decoded when gathered (``on_the_fly``). With ``first_order`` (rows -> the order the run first needs
    them, ``first_needed_order``) a build goes on in the background while training starts, decoding files in that
    order; a batch waits only for its own files (``build_overlap``), and it decodes once ``after()`` returns (a
    build queued behind another: ``build_after``). A build another process of the host has going on that way is
    followed the same way (``build_follow``) instead of waited for whole.

    ``label_classes`` maps a class-label variable (``labels.class_label_variables``) to its class count: every
    value must be a whole number from 0 to count - 1. Raises :class:`DatasetError` on any problem.
    """
    expected = _expected(expected_shapes)
    found = cached_index(csv_path, expected, label_classes, cache_dir, progress, build_workers, stop,
                         cache_budget, first_order, after) if cache else None
    if found is None:
        index, _, _ = build_index(csv_path, expected, None, label_classes)
        images = decode_in_memory(index, os.fspath(Path(csv_path).parent))
    else:
        index, images = found
    return Dataset(index.shown, list(index.variables), index.size, dict(index.numbers), images, normalize,
                   dict(index.kinds), dict(index.row_files), dict(index.files))


def _builds(dataset: Dataset) -> List[Any]:
    """The states of the cache builds going on behind ``dataset``'s images (``first_order``)."""
    return [source.state for source in dataset.images.values() if isinstance(source, BuildingImages)]


def building_note(dataset: Dataset) -> Optional[str]:
    """A line for the rank's log when ``dataset``'s cache is still being built as it is opened: by this process
    behind training, or by another process of the host and followed (``build_follow``); None when it is whole."""
    states = _builds(dataset)
    if not states or all(state.ended for state in states):
        return None
    if any(isinstance(state, FollowedState) for state in states):
        return "its dataset cache is being built by another process of the host; batches wait for their own chunks"
    return "its dataset cache is being built behind training; batches wait for their own chunks"


def build_note(*datasets: Dataset, timeout: float = 60.0) -> Optional[str]:
    """After training: wait (asleep, ``timeout`` s at most in all) for the cache builds still going on behind
    ``datasets`` (``first_order``) to end, so nothing they report outlives the run; returns a line to show when a
    stop request ended one (its build folder stays, and the next start resumes it), else None."""
    deadline = time.monotonic() + timeout
    note = None
    for state in [state for dataset in datasets for state in _builds(dataset)]:
        state.wait_end(max(0.0, deadline - time.monotonic()))
        if state.stopped:
            note = ("the dataset cache build was stopped with the run; it resumes where it stopped when training "
                    "starts again")
    return note


def build_after(dataset: Dataset, stop: Optional[StopFn] = None) -> Optional[Callable[[], None]]:
    """For a build queued behind ``dataset``'s (``load_dataset``'s ``after``): a wait, asleep, until the builds
    going on behind ``dataset`` have ended; it raises DatasetBuildStopped (the queued build then stops, and the
    batches that need its files decode them) on a stop request or when one of those builds failed (the run
    ends with that error). None when nothing is being built behind ``dataset``."""
    states = _builds(dataset)
    if not states:
        return None

    def wait() -> None:
        for state in states:
            while not state.wait_end(STOP_POLL_S):
                if stop is not None and stop():
                    raise DatasetBuildStopped("the validation set's dataset cache build was stopped before it "
                                              "started")
            if state.error is not None:
                raise DatasetBuildStopped("the validation set's dataset cache build did not start: the training "
                                          f"set's failed ({state.error})")
    return wait


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
                       progress: Optional[ProgressFn] = None, stop: Optional[StopFn] = None,
                       overlap: bool = False, start: Tuple[int, int] = (0, 0),
                       after: Optional[Callable[[], None]] = None) -> Any:
    """The ``which`` ('training' or 'validation') dataset with the shapes the Input layers declare. With
    ``overlap`` a cache build goes on while training starts, in the order the run first needs the files: training
    from ``start`` (epoch, samples into it: where a resumed run starts) on, validation in row order; it decodes
    once ``after()`` returns (``load_dataset``)."""

    if which not in ("training", "validation"):
        raise ValueError(f"unknown dataset split {which!r}; expected 'training' or 'validation'")
    ds = project.datasets
    return load_dataset(dataset_path(project, getattr(ds, which)),
                        expected_shapes=_expected_shapes(project, which) if shapes is None else shapes,
                        normalize=ds.normalize, cache=ds.cache, label_classes=class_label_variables(project.network),
                        progress=progress, stop=stop, cache_budget=ds.cache_budget,
                        first_order=(_first_needed(project, start) if which == "training" else _rows)
                        if overlap else None, after=after)


def _rows(size: int) -> np.ndarray:
    """The order validation reads the rows in (each worker a contiguous share: validation_batches)."""
    return np.arange(size, dtype=np.int64)




def _first_needed(project: "Project", start: Tuple[int, int]) -> Callable[[int], np.ndarray]:
    """rows -> ``first_needed_order`` for the run's seed, shuffle and batch size, from ``start`` (epoch, position)."""
    seed, shuffle, batch = project.config.seed, project.datasets.shuffle, project.config.batch_size
    epoch, position = start
    return lambda size: first_needed_order(size, seed, shuffle, epoch, position, batch)


def load_datasets(project: "Project", progress: Optional[Callable[[str, int, int, Optional[float]], None]] = None,
                  stop: Optional[StopFn] = None, overlap: bool = False, start: Tuple[int, int] = (0, 0)) -> tuple:
    """Training and validation datasets with the shapes the Input layers declare.

    ``progress(split, done, total, eta)`` follows a cache build (see ``cache_progress_records``); ``stop`` as
    for ``load_dataset``; ``overlap``: the builds go on while training starts, the training set's decoding in the
    order the run first needs the rows from ``start`` (epoch, samples into it: a resumed run's position,
    ``first_needed_order``) on, the validation set's queued behind it (the first validation, at the end of the
    first epoch, waits for the files it needs).
    """
    def split_progress(which: str) -> Optional[ProgressFn]:
        return None if progress is None else functools.partial(progress, which)
    training = load_dataset_split(project, "training", None, split_progress("training"), stop, overlap=overlap,
                                  start=start)
    validation = load_dataset_split(project, "validation", None, split_progress("validation"), stop,
                                    overlap=overlap, after=build_after(training, stop) if overlap else None)
    return training, validation


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
