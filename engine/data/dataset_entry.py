"""A dataset's index and pixels for training (issue 31): opened from the host's cache entry (the CSV hashed, one
stat per distinct image or matrix file, nothing parsed), or built into it by one process while the host's
others sleep on the build lock, or, when the build goes on behind training, follow it chunk by chunk
(``build_follow``); without a usable cache, built in memory.

The entry holds one decoded sample per distinct image file (``v<i>.npy``) and the index's columns
(``index_store``); a row's pixels are found through its row-to-file index, so a CSV whose million rows cycle
over a thousand images decodes and stores a thousand. A dataset without images (numeric columns, NNC's .csv
matrix cells) gets the same entry holding its index only: its float32 columns are parsed once per host and
memory-mapped by every rank (one copy in the page cache) instead of parsed into each rank's memory.
"""
from __future__ import annotations

import errno
import io
import logging
import os
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

import numpy as np

from nnconsole.engine.data.cache import _cache_dirs, _cache_key, _cache_prefix, order_file, variable_file
from nnconsole.engine.data import cache_build
from nnconsole.engine.atomic import atomic_write
from nnconsole.engine.data.build_follow import FollowedState, announce, map_stable, read_marker
from nnconsole.engine.data.build_overlap import BuildingImages, BuildState, PendingBuild, first_use_order, \
    keep_done_chunks
from nnconsole.engine.data.cache_build import (Failure, Followed, ImageJob, ProgressFn, StopFn, cached_entry,
                                               default_workers)
from nnconsole.engine.data.cache_partial import read_progress, write_progress
from nnconsole.engine.data.csv_reader import DatasetError, PathLike
from nnconsole.engine.data.csv_stream import file_digest
from nnconsole.engine.data.regular_file import open_regular
from nnconsole.engine.data.decode import ImageLayout, decode_images, image_layout, image_problem
from nnconsole.engine.data.index import DatasetIndex, build_index, changed_file
from nnconsole.engine.data.index_store import load_index, save_index
from nnconsole.engine.data.on_the_fly import OnDemandImages

log = logging.getLogger(__name__)
FirstOrderFn = Callable[[int], np.ndarray]  # rows -> the first epoch's sample order
AfterFn = Callable[[], None]  # a background build's wait for its turn (raises DatasetBuildStopped to give it up)
BUDGET_SHARE = 0.8  # of the cache folder's free space, when no budget is set


def pixel_budget(folder: Path, budget_gb: float) -> int:
    """Bytes the decoded images may take in ``folder``: ``budget_gb`` (GB) when set, else 80% of its free space."""
    if budget_gb and budget_gb > 0:
        return int(float(budget_gb) * 1e9)
    try:
        st = os.statvfs(folder)
    except OSError:
        return 0
    return int(st.f_bavail * st.f_frsize * BUDGET_SHARE)


def pixel_bytes(jobs: List[ImageJob]) -> int:
    return sum(len(j.paths) * int(np.prod(j.layout.sample_shape)) for j in jobs)


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


def _stale(folder: str, shown: str, budget_gb: float) -> Any:
    def check(meta: dict, arrays: Dict[str, np.ndarray]) -> None:
        index = load_index(meta, arrays, shown)
        for name, table in index.files.items():  # image and matrix files: one stat per distinct spelling
            changed = changed_file(table, folder)
            if changed is not None:
                raise ValueError(f"{index.kinds[name]} file '{table.cell(changed)}' changed or went since the "
                                 "cache was built")
        need = int(meta["index"].get("pixel_bytes", 0))
        if meta["index"].get("on_the_fly") and need <= pixel_budget(Path(folder), budget_gb):
            raise ValueError("its images are decoded on the fly, but they now fit the cache's disk budget")
    return check


def _layouts(meta: dict) -> Dict[str, ImageLayout]:
    try:
        return {name: ImageLayout(str(v[0]), int(v[1]), int(v[2]), bool(v[3]))
                for name, v in meta["index"]["layouts"].items()}
    except (KeyError, TypeError, ValueError, IndexError):
        raise ValueError("the meta's dataset index gives no image layouts") from None


def on_demand(index: DatasetIndex, folder: str, name: str, layout: ImageLayout) -> OnDemandImages:
    """``name``'s images decoded per batch, a bad file reported at the CSV line that first names it."""
    files = index.files[name]

    def error(k: int, kind: str, reason: str) -> DatasetError:
        return image_problem(index.shown, name, layout, index.targets[name], int(files.lines[0]),
                             int(files.lines[k]), files.cell(k), kind, reason)
    return OnDemandImages(files.paths(folder), layout, error)


def _meta(index: DatasetIndex, index_meta: Dict[str, Any], jobs: List[ImageJob], checksums: Dict[str, str]
          ) -> Dict[str, Any]:
    variables = {j.name: {"file": j.file, "shape": list(j.layout.sample_shape), "dtype": "uint8",
                          "count": len(j.paths)} for j in jobs}
    return {"size": index.size, "chunk_rows": cache_build.CHUNK,  # as build_entry chunked the pixels
            "variables": variables, "checksums": checksums, "index": index_meta}


def _read_order(path: Path) -> np.ndarray:
    """A decode order saved in a build folder (a regular file, not followed through a link)."""
    with open_regular(path, follow_links=False) as fh:
        return np.load(fh, allow_pickle=False)


def _keep_written_chunks(partial: Path, jobs: List[ImageJob], key: str) -> None:
    """When ``partial`` is a build being resumed in another decode order than it was started in (a resumed run
    needs its files from the epoch and position it resumes at), change ``jobs``' orders so that the chunks it
    has written keep their files (``keep_done_chunks``) and record the new order as the build's: the build then
    resumes instead of starting over. The order it was started in is the one saved beside its pixels."""
    progress = read_progress(partial)
    if progress.get("key") != key or progress.get("chunk") != cache_build.CHUNK or "done" not in progress:
        return
    if progress.get("order", "files") == "files":  # started in file order (a build without first_order)
        previous = [np.arange(len(job.paths), dtype=np.uint32) for job in jobs]
    else:
        try:
            previous = [_read_order(partial / order_file(job.file)) for job in jobs]
        except (OSError, ValueError, EOFError):
            return  # no saved order (or a damaged one): the build starts over
        started = [ImageJob(job.name, job.file, job.paths, job.layout, p) for job, p in zip(jobs, previous)]
        if any(p.shape != (len(job.paths),) or not np.array_equal(np.sort(p), np.arange(len(job.paths)))
               for job, p in zip(jobs, previous)) or progress.get("order") != cache_build.order_digest(started):
            return
    chunks = cache_build._chunks(jobs)
    for j, job in enumerate(jobs):
        done = [chunks[i][1] // cache_build.CHUNK for i in progress["done"] if 0 <= i < len(chunks)
                and chunks[i][0] == j]
        job.order = keep_done_chunks(previous[j], done, job.order, cache_build.CHUNK)
    write_progress(partial, dict(progress, order=cache_build.order_digest(jobs)))


def _pending(partial: Path, index: DatasetIndex, index_meta: Dict[str, Any], jobs: List[ImageJob], key: str,
             progress: Optional[ProgressFn], workers: Optional[int], stop: Optional[StopFn],
             first_order: FirstOrderFn, after: Optional[AfterFn] = None) -> PendingBuild:
    """The build of ``jobs`` to go on in the background, decoding files in first-use order (once ``after()``
    returns: a build queued behind another); its view is the index (memory-mapped from the build folder) and
    ``BuildingImages`` over the arrays being written. It is announced for the host's other processes to follow."""
    order = first_order(index.size)
    for job in jobs:
        job.order = first_use_order(index.row_files[job.name], order, len(job.paths))
    _keep_written_chunks(partial, jobs, key)
    done = cache_build.prepare_files(partial, jobs, key)
    for job in jobs:  # what a follower, and a later run resuming this build, read its decode order from
        saved = io.BytesIO()
        np.save(saved, job.order, allow_pickle=False)
        atomic_write(str(partial / order_file(job.file)), saved.getvalue())
    announce(partial, key, cache_build.order_digest(jobs), cache_build.CHUNK, index.size, index_meta)
    state = BuildState([job.order for job in jobs], cache_build.CHUNK)
    arrays = {file: np.load(partial / file, mmap_mode="r") for file in index_meta["arrays"]}
    mapped = load_index({"index": index_meta, "size": index.size}, arrays, index.shown)
    folder = os.fspath(Path(index.shown).parent)
    images = {}
    for j, job in enumerate(jobs):
        def error(k: int, kind: str, reason: str, job: ImageJob = job) -> DatasetError:
            return failure_error(mapped, jobs, (job.name, k, kind, reason))
        images[job.name] = BuildingImages(np.load(partial / job.file, mmap_mode="r"), state, j,
                                          mapped.files[job.name].paths(folder), job.layout, error)

    def report(done_count: int, total: int, eta: Optional[float]) -> None:
        try:  # on the build's thread: a report that fails (the run's records closed) must not fail the build
            if progress is not None:
                progress(done_count, total, eta)
        except (OSError, ValueError) as exc:
            log.debug("dataset cache progress not reported: %s", exc)

    def finish() -> Tuple[Dict[str, Any], List[str]]:
        if after is not None:
            after()
        failure, checksums = cache_build.build_entry(partial, jobs, key, report, workers or default_workers(),
                                                     stop, ready=state.finished, prepared=done)
        if failure is not None:
            raise failure_error(mapped, jobs, failure)
        for job in jobs:  # a finished entry holds no decode order
            (partial / order_file(job.file)).unlink(missing_ok=True)
        return _meta(index, index_meta, jobs, checksums), [j.file for j in jobs]
    return PendingBuild((mapped, images), finish, state.end)


def _follower(shown: str, key: str) -> Callable[[Path, Path, Path], Any]:
    """(build folder, entry, build lock) -> (index, pixels) of another process's announced build in it, to train on while it goes on
    (``FollowedState``: a gather waits for the chunks it needs), or None when it holds no build to follow."""
    folder = os.fspath(Path(shown).parent)

    def follow(partial: Path, entry: Path, lock: Path) -> Any:
        marker = read_marker(partial, key)
        if marker is None:
            return None
        try:
            index_meta = marker["index"]
            arrays = {file: np.load(partial / file, mmap_mode="r") for file in index_meta["arrays"]}
            index = load_index({"index": index_meta, "size": marker["size"]}, arrays, shown)
            layouts = _layouts({"index": index_meta})
            jobs = [ImageJob(name, variable_file(i), index.files[name].paths(folder), layouts[name])
                    for i, name in enumerate(index.image_variables)]
            orders = [np.load(partial / order_file(job.file)) for job in jobs]
            pixels = [map_stable(partial / job.file) for job in jobs]
            if any(len(o) != len(j.paths) or len(p[0]) != len(j.paths) for o, j, p in zip(orders, jobs, pixels)):
                return None
        except (OSError, ValueError, KeyError, TypeError):  # not (or no longer) a build to follow
            return None
        state = FollowedState(partial, entry, lock, marker,
                              orders, [job.file for job in jobs], [p[1] for p in pixels])
        images = {}
        for j, job in enumerate(jobs):
            def error(k: int, kind: str, reason: str, job: ImageJob = job) -> DatasetError:
                return failure_error(index, jobs, (job.name, k, kind, reason))
            images[job.name] = BuildingImages(pixels[j][0], state, j, job.paths, job.layout, error)
        state.images = [images[job.name] for job in jobs]
        log.info("following the dataset cache build in %s: batches wait for their own chunks", partial)
        return index, images
    return follow


def cached_index(csv_path: PathLike, expected: Mapping[str, Tuple[int, ...]],
                 label_classes: Optional[Mapping[str, int]], cache_dir: Optional[PathLike],
                 progress: Optional[ProgressFn], workers: Optional[int], stop: Optional[StopFn],
                 budget_gb: float = 0.0, first_order: Optional[FirstOrderFn] = None,
                 after: Optional[AfterFn] = None) -> Optional[Tuple[DatasetIndex, Dict[str, Any]]]:
    """(index, pixels per distinct file) memory-mapped from the host's entry, built first when needed; None when
    no cache folder is usable. A CSV without images gets an entry holding its index only (pixels: none). When the decoded images would
    pass the disk budget (``budget_gb``, ``pixel_budget``) the entry holds the index only and the pixels are
    ``OnDemandImages``, decoded per batch.

    With ``first_order`` (rows -> the order the run first needs them: the first epoch's, or a resumed run's from
    where it resumes) a build returns at once, once the index is written, and decodes on in the background in the
    order the run first needs the files (a resumed build keeps the chunks it wrote in another order); the pixels
    are then ``BuildingImages``, whose gathers wait for the chunks they need (build_overlap), and the build
    decodes once ``after()`` returns (queued behind another build); a process that finds another's such build
    going on follows it the same way (build_follow) instead of waiting for the whole entry."""
    shown, path = os.fspath(csv_path), Path(csv_path)
    folder = os.fspath(path.parent)
    digest, size = file_digest(csv_path)
    key = _cache_key(digest, size, expected, label_classes)

    def build(partial: Path) -> Any:  # (meta, pixel files), or a PendingBuild with first_order
        index, built_digest, built_size = build_index(csv_path, expected, None, label_classes)
        if (built_digest, built_size) != (digest, size):
            raise OSError(errno.EAGAIN, f"{shown} changed while it was read; load it again")
        index_meta = save_index(index, partial)
        jobs = image_jobs(index, folder)
        need = pixel_bytes(jobs)
        index_meta["pixel_bytes"] = need
        index_meta["layouts"] = {j.name: [j.layout.mode, j.layout.height, j.layout.width, j.layout.channel_axis]
                                 for j in jobs}
        index_meta["on_the_fly"] = need > pixel_budget(partial.parent, budget_gb)
        if index_meta["on_the_fly"]:
            jobs = []  # only the index is cached: the images are decoded per batch
        elif first_order is not None and jobs:
            return _pending(partial, index, index_meta, jobs, key, progress, workers, stop, first_order, after)
        failure, checksums = cache_build.build_entry(partial, jobs, key, progress, workers or default_workers(),
                                                     stop) if jobs else (None, {})
        if failure is not None:
            raise failure_error(index, jobs, failure)
        return _meta(index, index_meta, jobs, checksums), [j.file for j in jobs]

    follow = _follower(shown, key) if first_order is not None else None
    found = cached_entry(_cache_dirs(path, cache_dir), _cache_prefix(path), key, _stale(folder, shown, budget_gb),
                         build, progress, stop, follow)
    if found is None:
        return None
    if isinstance(found, (PendingBuild, Followed)):
        return found.view
    meta, arrays = found
    index = load_index(meta, arrays, shown)
    if meta["index"].get("on_the_fly"):
        layouts = _layouts(meta)
        return index, {name: on_demand(index, folder, name, layouts[name]) for name in index.image_variables}
    return index, {name: arrays[meta["variables"][name]["file"]] for name in index.image_variables}
