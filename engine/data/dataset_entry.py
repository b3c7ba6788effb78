"""A dataset's index and pixels for training (issue 31): opened from the host's cache entry (the CSV hashed, one
stat per distinct image file, nothing parsed), or built into it by one process while the host's others sleep
on the build lock; without a usable cache, built in memory.

The entry holds one decoded sample per distinct image file (``v<i>.npy``) and the index's columns
(``index_store``); a row's pixels are found through its row-to-file index, so a CSV whose million rows cycle
over a thousand images decodes and stores a thousand.
"""
from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np

from nnconsole.engine.data.cache import _cache_dirs, _cache_key, _cache_prefix, variable_file
from nnconsole.engine.data import cache_build
from nnconsole.engine.data.cache_build import (Failure, ImageJob, ProgressFn, StopFn, cached_entry,
                                               default_workers)
from nnconsole.engine.data.csv_reader import DatasetError, PathLike, _looks_like_image
from nnconsole.engine.data.csv_stream import CHUNK_ROWS, CsvStream, file_digest
from nnconsole.engine.data.decode import decode_images, image_layout, image_problem
from nnconsole.engine.data.index import DatasetIndex, build_index, changed_file
from nnconsole.engine.data.index_store import load_index, save_index


def has_images(csv_path: PathLike) -> bool:
    """Whether the CSV has an image variable (a plain column whose first non-empty cell in the first chunk names
    an image, as the index decides): reads the header and the first chunk only."""
    with CsvStream(csv_path, CHUNK_ROWS) as stream:
        first = next(stream.chunks(), ([], []))[0]
        return any(var.plain and _looks_like_image(next((r[var.columns[0]] for r in first
                                                         if r[var.columns[0]].strip()), ""))
                   for var in stream.variables)


def image_jobs(index: DatasetIndex, folder: str) -> List[ImageJob]:
    """One decode job per image variable: its distinct files (paths made a slice at a time) and their layout."""
    jobs = []
    for i, name in enumerate(index.image_variables):
        files = index.files[name]
        paths = files.paths(folder)
        layout = image_layout(index.shown, name, index.targets[name], paths[0], int(files.lines[0]), files.cell(0))
        jobs.append(ImageJob(name, variable_file(i), paths, layout))
    return jobs


def failure_error(index: DatasetIndex, jobs: List[ImageJob], failure: Failure) -> DatasetError:
    """The located error for a file a decode failed on: the CSV line that first names it."""
    name, k, kind, reason = failure
    job = next(j for j in jobs if j.name == name)
    files = index.files[name]
    return image_problem(index.shown, name, job.layout, index.targets[name], int(files.lines[0]),
                         int(files.lines[k]), files.cell(k), kind, reason)


def decode_in_memory(index: DatasetIndex, folder: str) -> Dict[str, np.ndarray]:
    """Every distinct image decoded in this process (no cache): uint8 (files, *sample shape) per variable."""
    jobs = image_jobs(index, folder)
    images = {}
    for job in jobs:
        out = np.empty((len(job.paths),) + job.layout.sample_shape, dtype=np.uint8)
        failure = decode_images(job.paths[:], job.layout, out)
        if failure is not None:
            raise failure_error(index, jobs, (job.name,) + tuple(failure))  # type: ignore[arg-type]
        images[job.name] = out
    return images


def _stale(folder: str, shown: str) -> Any:
    def check(meta: dict, arrays: Dict[str, np.ndarray]) -> None:
        index = load_index(meta, arrays, shown)
        for name in index.image_variables:
            changed = changed_file(index.files[name], folder)
            if changed is not None:
                raise ValueError(f"image file '{index.files[name].cell(changed)}' changed or went since the cache "
                                 "was built")
    return check


def cached_index(csv_path: PathLike, expected: Mapping[str, Tuple[int, ...]],
                 label_classes: Optional[Mapping[str, int]], cache_dir: Optional[PathLike],
                 progress: Optional[ProgressFn], workers: Optional[int], stop: Optional[StopFn]
                 ) -> Optional[Tuple[DatasetIndex, Dict[str, np.ndarray]]]:
    """(index, pixels per distinct file) memory-mapped from the host's entry, built first when needed; None when
    the CSV has no image variable (nothing to share) or no cache folder is usable."""
    if not has_images(csv_path):
        return None
    shown, path = os.fspath(csv_path), Path(csv_path)
    folder = os.fspath(path.parent)
    digest, size = file_digest(csv_path)
    key = _cache_key(digest, size, expected, label_classes)

    def build(partial: Path) -> Tuple[Dict[str, Any], List[str]]:
        index, built_digest, built_size = build_index(csv_path, expected, None, label_classes)
        if (built_digest, built_size) != (digest, size):
            raise OSError(errno.EAGAIN, f"{shown} changed while it was read; load it again")
        index_meta = save_index(index, partial)
        jobs = image_jobs(index, folder)
        failure, checksums = cache_build.build_entry(partial, jobs, key, progress, workers or default_workers(),
                                                     stop)
        if failure is not None:
            raise failure_error(index, jobs, failure)
        variables = {j.name: {"file": j.file, "shape": list(j.layout.sample_shape), "dtype": "uint8",
                              "count": len(j.paths)} for j in jobs}
        meta = {"size": index.size, "chunk_rows": cache_build.CHUNK,  # as build_entry chunked the pixels
                "variables": variables, "checksums": checksums, "index": index_meta}
        return meta, [j.file for j in jobs]

    found = cached_entry(_cache_dirs(path, cache_dir), _cache_prefix(path), key, _stale(folder, shown), build,
                         progress, stop)
    if found is None:
        return None
    meta, arrays = found
    index = load_index(meta, arrays, shown)
    return index, {name: arrays[meta["variables"][name]["file"]] for name in index.image_variables}
