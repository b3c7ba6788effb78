"""Building the shared dataset cache: image files decoded by worker processes over all cores (engine/data/decode_process.py)
straight into the entry's uint8 ``.npy`` files, with progress and ETA; an interrupted build resumes from the chunks it finished.

``cached_images`` is the one entry point: it returns the read-only memory maps of a valid entry, building
it first under the CSV's lock when needed, or None when no cache folder is writable.
"""
from __future__ import annotations

import json
import logging
import os
import selectors
import subprocess
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from nnconsole.engine.data import cache
from nnconsole.engine.data import decode_process
from nnconsole.engine.data.decode import ImageLayout
from nnconsole.engine.helper_processes import python_module_command

log = logging.getLogger(__name__)

# progress(done images, total images, ETA in seconds or None): the CLI, the run's events and the GUI show it
ProgressFn = Callable[[int, int, Optional[float]], None]

CHUNK = 256  # images per pool task: the unit of progress and of resuming
POOL_MIN_IMAGES = 2048  # below this, starting worker processes costs more than it saves
PROGRESS_EVERY_S = 0.5


@dataclass
class ImageJob:
    """One image variable to decode: its files in sample order and the layout every sample must have."""

    name: str
    file: str  # the .npy file's name inside the entry
    paths: List[str]
    layout: ImageLayout


# Failure of a build: (variable, sample index, "decode" or "size", reason), for dataset_decode.image_problem.
Failure = Tuple[str, int, str, str]


def default_workers() -> int:
    """All the cores of the machine (an MPI binding to one core does not apply: the build resets it)."""
    return max(1, os.cpu_count() or 1)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _chunks(jobs: Sequence[ImageJob]) -> List[Tuple[int, int, int]]:
    """(job index, start, stop) of every task, in a fixed order (a chunk's position is its id)."""
    return [(j, s, min(s + CHUNK, len(job.paths))) for j, job in enumerate(jobs) for s in range(0, len(job.paths),
                                                                                               CHUNK)]


def _prepare_files(partial: Path, jobs: Sequence[ImageJob], key: str) -> set:
    """Create (or, resuming, reopen) the entry's files; returns the ids of the chunks already done."""
    previous = cache.read_progress(partial)
    resumable = previous.get("key") == key and previous.get("chunk") == CHUNK
    for job in jobs:
        path = partial / job.file
        shape = (len(job.paths),) + job.layout.sample_shape
        if resumable and path.is_file():
            try:
                if np.load(path, mmap_mode="r").shape == shape:
                    continue
            except (OSError, ValueError):
                pass
        resumable = False
        break
    if not resumable:
        for child in partial.iterdir():
            child.unlink()
        for job in jobs:
            np.lib.format.open_memmap(partial / job.file, mode="w+", dtype=np.uint8,
                                      shape=(len(job.paths),) + job.layout.sample_shape).flush()
        return set()
    done = set(int(i) for i in previous.get("done", []))
    log.info("resuming the dataset cache build in %s: %d chunks already decoded", partial, len(done))
    return done


def build_entry(partial: Path, jobs: Sequence[ImageJob], key: str, progress: Optional[ProgressFn],
                workers: int) -> Optional[Failure]:
    """Decode every image of ``jobs`` into ``partial``; returns the first failure, or None when all decoded."""
    chunks = _chunks(jobs)
    done = _prepare_files(partial, jobs, key)
    total = sum(len(j.paths) for j in jobs)
    todo = [i for i in range(len(chunks)) if i not in done]
    count = sum(chunks[i][2] - chunks[i][1] for i in done)
    remaining = total - count
    started = time.monotonic()
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
        cache.write_progress(partial, {"key": key, "chunk": CHUNK, "done": sorted(done), "total": total,
                                       "count": count})
        if progress is not None:
            rate = decoded_here / max(now - started, 1e-9)
            eta = (total - count) / rate if decoded_here else None
            progress(count, total, eta)

    def task(i: int) -> Tuple[str, int, List[str], ImageLayout]:
        j, start, stop = chunks[i]
        return str(partial / jobs[j].file), start, jobs[j].paths[start:stop], jobs[j].layout

    def finished(i: int, failure: Optional[Tuple[int, str, str]]) -> Optional[Failure]:
        nonlocal count, decoded_here
        if failure is not None:
            return (jobs[chunks[i][0]].name,) + failure
        done.add(i)
        size = chunks[i][2] - chunks[i][1]
        count += size
        decoded_here += size
        record()
        return None

    record(final=True)
    try:
        if workers > 1 and remaining >= POOL_MIN_IMAGES:
            failure = _run_pool(todo, task, finished, min(workers, len(todo)))
        else:
            failure = None
            for i in todo:
                failure = finished(i, decode_process.decode_chunk(*task(i)))
                if failure is not None:
                    break
    finally:
        decode_process.close_maps()
    if failure is not None:
        return failure
    record(final=True)
    return None


def _run_pool(todo: List[int], task: Callable, finished: Callable, workers: int) -> Optional[Failure]:
    """The chunks ``todo`` decoded by ``workers`` decode processes, two tasks in flight per process;
    chunks a dead worker held are decoded here instead."""

    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    procs = [subprocess.Popen(python_module_command("nnconsole.engine.data.decode_process"), stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, env=env) for _ in range(workers)]
    pending = list(reversed(todo))
    held: Dict[int, List[int]] = {p.pid: [] for p in procs}
    unread: Dict[int, bytes] = {p.pid: b"" for p in procs}
    orphans: List[int] = []
    selector = selectors.DefaultSelector()

    def drop(proc: subprocess.Popen) -> None:
        """A worker that died (killed, out of memory) or cannot take tasks: its chunks are done here."""
        if proc.stdout in selector.get_map():
            selector.unregister(proc.stdout)
        orphans.extend(held.pop(proc.pid, []))

    def send(proc: subprocess.Popen) -> None:
        if not pending or proc.pid not in held:
            return
        i = pending.pop()
        held[proc.pid].append(i)
        path, start, paths, layout = task(i)
        message = {"id": i, "path": path, "start": start, "paths": paths,
                   "layout": [layout.mode, layout.height, layout.width, layout.channel_axis]}
        try:
            proc.stdin.write(json.dumps(message).encode() + b"\n")
            proc.stdin.flush()
        except OSError:  # the worker is gone (broken pipe)
            drop(proc)

    try:
        for proc in procs:
            selector.register(proc.stdout, selectors.EVENT_READ, proc)
            for _ in range(2):
                send(proc)
        while selector.get_map():
            for key, _ in selector.select():
                proc = key.data
                data = os.read(proc.stdout.fileno(), 1 << 16)  # raw reads: no answer waits in a Python buffer
                if not data:
                    drop(proc)
                    continue
                lines = (unread[proc.pid] + data).split(b"\n")
                unread[proc.pid] = lines.pop()  # an incomplete last line waits for the rest
                for line in lines:
                    if proc.pid not in held:  # dropped while answering: what it still held is redone here
                        break
                    answer = json.loads(line)
                    held[proc.pid].remove(answer["id"])
                    failure = finished(answer["id"], tuple(answer["failure"]) if answer["failure"] else None)
                    if failure is not None:
                        return failure
                    send(proc)
                if proc.pid in held and not held[proc.pid] and not pending:
                    selector.unregister(proc.stdout)
    finally:
        selector.close()
        for proc in procs:
            try:
                proc.stdin.close()
            except OSError:
                pass
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            proc.stdout.close()
    if orphans or pending:
        log.warning("a dataset decoding process ended early; decoding its part here")
    for i in orphans + list(reversed(pending)):
        failure = finished(i, decode_process.decode_chunk(*task(i)))
        if failure is not None:
            return failure
    return None


def cached_images(dirs: Sequence[Path], prefix: str, key: str, size: int, names: Sequence[str],
                  jobs: Callable[[], List[ImageJob]], progress: Optional[ProgressFn] = None, workers: Optional[int] = None
                  ) -> Tuple[Optional[Dict[str, np.ndarray]], Optional[Failure]]:
    """(memory maps of the valid entry, None), built first when needed; (None, failure) when an image is bad;
    (None, None) when no folder of ``dirs`` is writable. ``jobs`` is called only when a build is needed."""
    name = prefix + key[:32]
    for folder in dirs:
        entry = folder / name
        arrays = cache.read_entry(entry, key, size, names)
        if arrays is not None:
            return arrays, None
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with cache.csv_lock(folder, prefix, poll=lambda: _relay(folder, name, progress)) as locked:
                found = cache.read_entry(entry, key, size, names, locked=True)  # built while we waited
                if found is not None:
                    if progress is not None:  # the other process's build ended: its last figures may be older
                        progress(size * len(names), size * len(names), 0.0)
                    return found, None
                todo = jobs()
                partial = cache.partial_path(folder, name, locked)
                partial.mkdir(exist_ok=True)
                if locked:
                    cache.remove_stale(folder, prefix, keep=name)
                failure = build_entry(partial, todo, key, progress, workers or default_workers())
                if failure is not None:
                    shutil.rmtree(partial, ignore_errors=True)
                    return None, failure
                cache.finish_entry(partial, entry, key, size, {j.name: j.layout.sample_shape for j in todo},
                                   {j.name: j.file for j in todo})
            return cache.open_entry(entry, key, size, names), None
        except OSError as exc:
            log.info("dataset cache folder %s not usable (%s); trying the next one", folder, exc)
    log.warning("no writable dataset cache folder among %s; images are decoded into memory",
                ", ".join(map(str, dirs)))
    return None, None


def _relay(folder: Path, name: str, progress: Optional[ProgressFn]) -> None:
    """While another process builds the entry, pass its progress on (read from its progress file)."""
    if progress is None:
        return
    state = cache.read_progress(cache.partial_path(folder, name, locked=True))
    if state.get("total"):
        progress(int(state.get("count", 0)), int(state["total"]), None)
