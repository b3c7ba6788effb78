"""Building the shared dataset cache: image files decoded by worker processes over all cores (engine/data/decode_process.py)
straight into the entry's uint8 ``.npy`` files, with progress and ETA; an interrupted build resumes from the chunks it finished.

``cached_entry`` is the one entry point: it returns the meta and read-only memory maps of a valid entry
(the dataset index and one decoded sample per distinct file), building it first under the CSV's lock when needed, or None when no cache folder is usable (not writable, full, or
holding an entry that cannot be replaced: each is reported). A stop request (``stop``: a signal or the run's
STOP file) ends a build within a second or so, between chunks, and leaves it to be resumed. A build may go on
in the background while training starts (``PendingBuild``, engine/data/build_overlap.py), decoding the files in
the order the first epoch needs them (``ImageJob.order``); the host's other processes then follow it
(``follow``: engine/data/build_follow.py) instead of waiting for the whole entry.
"""
from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from nnconsole.engine.data import cache
from nnconsole.engine.data import decode_process
from nnconsole.engine.data.build_follow import clear_failures, clear_for_rebuild, record_failure, withdraw
from nnconsole.engine.data.build_overlap import PendingBuild, finish_in_background
from nnconsole.engine.data.cache_partial import (CacheDiskFullError, array_ready, chunk_digests, create_array,
                                                 disk_full, finish_entry, new_partial, partials, read_progress,
                                                 resumable_partial, write_progress)
from nnconsole.engine.data.csv_reader import DatasetError
from nnconsole.engine.data.decode import ImageLayout
from nnconsole.engine.data.build_pool import run_pool

log = logging.getLogger(__name__)

# progress(done images, total images, ETA in seconds or None): the CLI, the run's events and the GUI show it
ProgressFn = Callable[[int, int, Optional[float]], None]
StopFn = Callable[[], bool]  # True once the user asked to stop (signal, STOP file)

CHUNK = 256  # images per pool task: the unit of progress and of resuming
POOL_MIN_IMAGES = 2048  # below this, starting worker processes costs more than it saves
PROGRESS_EVERY_S = 0.5


class DatasetBuildStopped(Exception):
    """A stop request ended a cache build; its build folder stays and the next build resumes it."""


@dataclass
class ImageJob:
    """One image variable to decode: its files in sample order and the layout every sample must have."""

    name: str
    file: str  # the .npy file's name inside the entry
    paths: Sequence[str]  # one per distinct file (index.FilePaths: made a slice at a time)
    layout: ImageLayout
    order: Optional[np.ndarray] = None  # the files in the order to decode them (build_overlap); None: 0, 1, 2...

    def rows(self, start: int, stop: int) -> Sequence[int]:
        """The distinct files that positions start..stop of the decode order name."""
        return range(start, stop) if self.order is None else [int(f) for f in self.order[start:stop]]


# Failure of a build: (variable, distinct file index, "decode" or "size", reason), for dataset_decode.image_problem.
Failure = Tuple[str, int, str, str]
ChunkReadyFn = Callable[[int, int], None]  # (job, chunk of that job): its samples are written


def default_workers() -> int:
    """All the cores of the machine (an MPI binding to one core does not apply: the build resets it)."""
    return max(1, os.cpu_count() or 1)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _chunks(jobs: Sequence[ImageJob]) -> List[Tuple[int, int, int]]:
    """(job index, start, stop) of every task, in a fixed order (a chunk's position is its id)."""
    return [(j, s, min(s + CHUNK, len(job.paths))) for j, job in enumerate(jobs) for s in range(0, len(job.paths),
                                                                                               CHUNK)]


def _shape(job: ImageJob) -> Tuple[int, ...]:
    return (len(job.paths),) + job.layout.sample_shape


def order_digest(jobs: Sequence[ImageJob]) -> str:
    """Names the decode order (a chunk's files depend on it): a resumed build must have the same."""
    if all(job.order is None for job in jobs):
        return "files"
    digest = hashlib.sha256()
    for job in jobs:
        digest.update(np.ascontiguousarray(job.order if job.order is not None else np.arange(len(job.paths)),
                                           dtype=np.uint32).tobytes())
    return digest.hexdigest()


def prepare_files(partial: Path, jobs: Sequence[ImageJob], key: str) -> Dict[int, str]:
    """Create (or, resuming, reuse) the entry's files; returns the digests of the chunks already done."""
    previous = read_progress(partial)
    chunks = _chunks(jobs)
    if previous.get("key") == key and previous.get("chunk") == CHUNK and "done" in previous \
            and previous.get("order", "files") == order_digest(jobs) \
            and all(array_ready(partial / job.file, _shape(job)) for job in jobs):
        done = chunk_digests(previous, chunks)
        log.info("resuming the dataset cache build in %s: %d chunks already decoded", partial, len(done))
        return done
    for job in jobs:  # starting over: only the files this build writes
        (partial / job.file).unlink(missing_ok=True)
    (partial / cache.PROGRESS_FILE).unlink(missing_ok=True)
    for job in jobs:
        create_array(partial / job.file, _shape(job))
    return {}


def build_entry(partial: Path, jobs: Sequence[ImageJob], key: str, progress: Optional[ProgressFn],
                workers: int, stop: Optional[StopFn] = None, ready: Optional[ChunkReadyFn] = None,
                prepared: Optional[Dict[int, str]] = None) -> Tuple[Optional[Failure], Dict[str, str]]:
    """Decode every image of ``jobs`` into ``partial``: (the first failure, {}) or (None, checksum per variable).

    Chunks are decoded in each job's ``order``; ``ready(job, chunk)`` is told each chunk once it is written (those
    a resumed build had already written first). ``prepared``: what ``prepare_files`` returned, when the caller
    created the files already. Raises DatasetBuildStopped on a stop request (the progress is saved first),
    CacheDiskFullError when the folder's disk is full."""
    chunks = _chunks(jobs)
    done = prepare_files(partial, jobs, key) if prepared is None else prepared
    if ready is not None:
        for i in done:
            ready(chunks[i][0], chunks[i][1] // CHUNK)
    total = sum(len(j.paths) for j in jobs)
    todo = [i for i in range(len(chunks)) if i not in done]
    count = sum(chunks[i][2] - chunks[i][1] for i in done)
    remaining = total - count
    started = time.monotonic()
    order = order_digest(jobs)
    opened: decode_process.OpenFiles = {}  # the files the chunks decoded here write into
    last_write = 0.0
    decoded_here = 0

    def record(final: bool = False) -> None:
        nonlocal last_write
        now = time.monotonic()
        if not final and now - last_write < PROGRESS_EVERY_S:
            return
        last_write = now
        for job in jobs:  # the chunks listed as done are on disk first: a resumed build trusts the list
            _fsync(partial / job.file)
        write_progress(partial, {"key": key, "chunk": CHUNK, "order": order, "done": sorted(done), "total": total,
                                 "count": count, "digests": {str(i): d for i, d in done.items()}})
        if progress is not None:
            rate = decoded_here / max(now - started, 1e-9)
            eta = (total - count) / rate if decoded_here else None
            progress(count, total, eta)

    def task(i: int) -> Tuple[str, Sequence[int], List[str], ImageLayout]:
        j, start, stop_row = chunks[i]
        job = jobs[j]
        rows = job.rows(start, stop_row)
        paths = job.paths[start:stop_row] if job.order is None else [job.paths[f] for f in rows]
        return str(partial / job.file), rows, paths, job.layout

    def finished(i: int, result: decode_process.ChunkResult) -> Optional[Failure]:
        nonlocal count, decoded_here
        failure, digest = result
        if failure is not None:
            return (jobs[chunks[i][0]].name,) + failure
        done[i] = digest
        size = chunks[i][2] - chunks[i][1]
        count += size
        decoded_here += size
        record()
        if ready is not None:
            ready(chunks[i][0], chunks[i][1] // CHUNK)
        return None

    def stopping() -> bool:
        if stop is None or not stop():
            return False
        record(final=True)
        return True

    record(final=True)
    try:
        if workers > 1 and remaining >= POOL_MIN_IMAGES:
            failure = run_pool(todo, lambda i: task(i) + (opened,), finished, min(workers, len(todo)), stopping,
                               DatasetBuildStopped)
        else:
            failure = None
            for i in todo:
                if stopping():
                    raise DatasetBuildStopped(f"the dataset cache build in {partial} was stopped")
                failure = finished(i, decode_process.decode_chunk(*task(i), files=opened))
                if failure is not None:
                    break
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise disk_full(partial.parent, 0) from None
        raise
    finally:
        decode_process.close_maps(opened)
    if failure is not None:
        return failure, {}
    record(final=True)
    return None, {job.name: _checksum(partial, job, [done[i] for i, c in enumerate(chunks) if c[0] == j])
                  for j, job in enumerate(jobs)}


def _checksum(partial: Path, job: ImageJob, digests: List[str]) -> str:
    """The checksum the entry's meta records for ``job``'s array: from the chunks' digests when they were decoded
    in file order, else read back (a chunk in first-use order holds scattered files)."""
    if job.order is None:
        return cache.combine_digests([bytes.fromhex(d) for d in digests])
    fd = os.open(partial / job.file, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    try:
        offset = cache.npy_layout(partial / job.file)[0]
        return cache.array_checksum(fd, offset, len(job.paths), int(np.prod(job.layout.sample_shape)), CHUNK)
    finally:
        os.close(fd)


# A build: writes an entry's arrays into the build folder it is given; returns the meta (without version and key)
# and the pixel arrays' file names, or a PendingBuild. Raises DatasetError for a bad dataset, DatasetBuildStopped on
# a stop request.
BuildFn = Callable[[Path], Union[Tuple[Dict[str, Any], List[str]], PendingBuild]]
CheckFn = Callable[[dict, Dict[str, np.ndarray]], None]
# A build another process is making, followed: (its build folder, the entry it becomes, the build lock) -> what
# the caller trains on meanwhile, or None when that folder holds no build that can be followed (yet).
FollowFn = Callable[[Path, Path, Path], Any]


class _Following(Exception):
    """Ends the wait for the build lock: the build going on may be followed (``Followed``)."""

    def __init__(self, view: Any) -> None:
        super().__init__("following another process's dataset cache build")
        self.view = view


@dataclass
class Followed:
    """What ``cached_entry`` returns when it follows another process's build: ``view``, from ``follow``."""

    view: Any


def _total(meta: dict) -> int:
    return sum(int(v.get("count", 0)) for v in meta.get("variables", {}).values() if isinstance(v, dict))


def cached_entry(dirs: Sequence[Path], prefix: str, key: str, check: CheckFn, build: BuildFn,
                 progress: Optional[ProgressFn] = None, stop: Optional[StopFn] = None,
                 follow: Optional[FollowFn] = None
                 ) -> Union[None, Tuple[dict, Dict[str, np.ndarray]], PendingBuild, Followed]:
    """(meta, memory maps) of the valid entry ``key``, built first when needed (by one process of the host: the
    others sleep on the CSV's flock, then open what it built); None when no folder of ``dirs`` is usable (each
    reason is logged); the PendingBuild ``build`` returned when it goes on in the background. With ``follow``, a
    process waiting for another's background build follows it instead (``Followed``: engine/data/build_follow.py).
    ``check`` refuses a stale entry (ValueError). Raises DatasetError for a bad dataset, and
    DatasetBuildStopped when ``stop()`` turns True during a build or the wait for one."""
    name = prefix + key[:32]
    for folder in dirs:
        entry = folder / name
        found = cache.read_entry(entry, key, check)
        if found is not None:
            return found
        if folder.name == cache.CACHE_FOLDER and folder.is_symlink():  # a project's folder leading elsewhere
            log.warning("dataset cache folder %s is a link; it is not followed (remove it to cache there)", folder)
            continue
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with contextlib.ExitStack() as held:
                locked = held.enter_context(cache.csv_lock(folder, prefix,
                                                           poll=lambda: _wait(folder, name, progress, stop, follow,
                                                                             cache.lock_path(folder, prefix))))
                found = cache.read_entry(entry, key, check, locked=True)  # built while we waited
                if found is not None:
                    if progress is not None:  # the other process's build ended: its last figures may be older
                        progress(_total(found[0]), _total(found[0]), 0.0)
                    return found
                partial = (resumable_partial(folder, name, key, CHUNK) if locked else None) \
                    or new_partial(folder, name)
                if locked:
                    cache.remove_stale(folder, prefix, keep=name, keep_partial=partial)
                    clear_failures(folder, name)
                try:
                    clear_for_rebuild(partial)  # what a follower of an earlier build mapped keeps its bytes
                    built = build(partial)
                except DatasetBuildStopped:
                    raise  # its build folder stays: the next load resumes it
                except BaseException:
                    cache.remove_build_folder(partial)  # a bad dataset, or no room: give its space back
                    raise
                if isinstance(built, PendingBuild):  # the rest is decoded on a thread that now holds the lock
                    finish_in_background(held.pop_all(), built, DatasetBuildStopped,
                                         lambda meta, files: (withdraw(partial),
                                                              finish_entry(partial, entry, key, meta, files)),
                                         lambda error: (record_failure(partial, error),
                                                        cache.remove_build_folder(partial)))
                    return built
                finish_entry(partial, entry, key, *built)
            return cache.open_entry(entry, key)
        except _Following as following:
            return Followed(following.view)
        except DatasetError:
            raise
        except (cache.StuckEntryError, CacheDiskFullError) as exc:
            log.warning("%s; trying the next cache folder", exc)
        except (OSError, ValueError) as exc:
            log.info("dataset cache folder %s not usable (%s); trying the next one", folder, exc)
    log.warning("no usable dataset cache folder among %s; images are decoded into memory",
                ", ".join(map(str, dirs)))
    return None


def _wait(folder: Path, name: str, progress: Optional[ProgressFn], stop: Optional[StopFn],
          follow: Optional[FollowFn] = None, lock: Optional[Path] = None) -> None:
    """While another process builds the entry: end the wait on a stop request, follow its build when it goes on
    in the background (raises _Following), and pass its progress on (read from its build folder's progress
    file)."""
    if stop is not None and stop():
        raise DatasetBuildStopped(f"stopped while waiting for another process's dataset cache build in {folder}")
    building = partials(folder, name)
    if follow is not None:
        for partial in building:
            view = follow(partial, folder / name, lock)
            if view is not None:
                raise _Following(view)
    if progress is None:
        return
    state = read_progress(building[0]) if building else {}
    if isinstance(state.get("total"), int) and state["total"] > 0:
        progress(int(state.get("count", 0)), int(state["total"]), None)
