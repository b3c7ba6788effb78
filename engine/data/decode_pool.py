"""Decode worker processes writing into memory shared with this process (issue 31): the on-the-fly decode of a
dataset over the cache's disk budget (``on_the_fly``) runs on every core, outside the training process's GIL.

The workers are the cache build's ``decode_process`` (one place for decoding): fresh interpreters taking JSON
tasks on stdin and answering on stdout. The shared memory is one anonymous memory file (``memfd_create``;
elsewhere an unlinked temporary file) that the workers inherit: it has no name in /dev/shm, so nothing is left
behind however the training process ends, and a killed training process closes the workers' stdin, which ends
them (no orphans). A batch (a ``DecodeJob``) gets a region of the file, split into one part per worker; a reader
thread collects the answers; a part whose worker died is decoded by the caller of ``result``. A process has one
pool (``shared_pool``), whatever number of datasets it decodes on the fly, ended at exit.
"""
from __future__ import annotations

import atexit
import json
import mmap
import os
import selectors
import subprocess
import tempfile
import threading
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from nnconsole.engine.data.decode import ImageLayout, decode_images
from nnconsole.engine.helper_processes import python_module_command

Failure = Tuple[int, str, str]  # (position in the job, "decode" or "size", reason), as decode_images reports
ALIGN = 64  # bytes: regions start on cache lines
CLOSE_WAIT_S = 1.0  # how long a closing pool lets a worker finish its task before killing it
WAIT_POLL_S = 0.5  # how often a caller waiting for a job checks that the pool is still open
LOCAL_SIZE_VARIABLES = ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "MV2_COMM_WORLD_LOCAL_SIZE")


def decode_workers() -> int:
    """Decode processes for this process: the host's cores shared by the MPI ranks on this host."""
    local = 1
    for name in LOCAL_SIZE_VARIABLES:
        try:
            local = max(1, int(os.environ[name]))
            break
        except (KeyError, ValueError):
            continue
    return max(1, (os.cpu_count() or 1) // local)


def _memory_file() -> int:
    if hasattr(os, "memfd_create"):
        return os.memfd_create("nnconsole-decode", getattr(os, "MFD_CLOEXEC", 0))
    handle, path = tempfile.mkstemp(prefix="nnconsole-decode-")  # pragma: no cover - not Linux
    os.unlink(path)  # pragma: no cover
    return handle  # pragma: no cover


class DecodeJob:
    """One batch of files being decoded into a region of the pool's memory file."""

    def __init__(self, pool: "DecodePool", paths: List[str], layout: ImageLayout, offset: int) -> None:
        self.pool = pool  # the pool to ask for its result and to release it to
        self.paths = paths
        self.layout = layout
        self.offset = offset
        self.size = len(paths) * int(np.prod(layout.sample_shape))
        self.remaining = 0  # parts still with a worker
        self.failures: Dict[int, Tuple[str, str]] = {}  # position -> (kind, reason)
        self.orphans: List[Tuple[int, int]] = []  # parts (start, end) whose worker died: decoded by the caller
        self.done = threading.Event()
        self.abandoned = False  # released before it was done: its region is freed when it is


class DecodePool:
    """``workers`` decode processes and the memory file they decode into; ``submit`` a batch, take its pixels with
    ``result``, then ``release`` it. Thread-safe. ``close`` ends the workers."""

    def __init__(self, workers: int) -> None:
        self._fd = _memory_file()
        self._size = 0
        self._map: Optional[mmap.mmap] = None
        self._lock = threading.Lock()
        self._regions: Dict[int, int] = {}  # start -> end of the regions in use
        self._tasks: Dict[int, Tuple[DecodeJob, int, int, int]] = {}  # task id -> (job, start, end, worker pid)
        self._next_id = 0
        self._turn = 0
        self._closed = False
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
        self._procs: List[subprocess.Popen] = []
        try:
            for _ in range(max(1, workers)):
                self._procs.append(subprocess.Popen(
                    python_module_command("nnconsole.engine.data.decode_process"), stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE, env=env, pass_fds=(self._fd,)))
        except OSError:
            self.close()
            raise
        self._live = [p.pid for p in self._procs]
        self._by_pid = {p.pid: p for p in self._procs}
        self._send_locks = {p.pid: threading.Lock() for p in self._procs}
        self._reader = threading.Thread(target=self._read, name="decode-pool-reader", daemon=True)
        self._reader.start()

    @property
    def pids(self) -> List[int]:
        return [p.pid for p in self._procs]

    @property
    def closed(self) -> bool:
        return self._closed

    # ---- the memory file ----------------------------------------------------------------------
    def _allocate(self, size: int) -> int:
        """The start of a free region of ``size`` bytes (the file grown when none fits); under the lock."""
        size = -(-size // ALIGN) * ALIGN
        position = 0
        for start in sorted(self._regions):
            if start - position >= size:
                break
            position = self._regions[start]
        end = position + size
        if end > self._size:
            grown = max(end, 2 * self._size, mmap.PAGESIZE)
            os.ftruncate(self._fd, grown)
            self._map = mmap.mmap(self._fd, grown)  # the old map lives on in any view of it
            self._size = grown
        if size:
            self._regions[position] = end
        return position

    def _view(self, job: DecodeJob) -> np.ndarray:
        shape = (len(job.paths),) + job.layout.sample_shape
        if not job.size:
            return np.empty(shape, dtype=np.uint8)
        with self._lock:
            mapped = self._map
        return np.frombuffer(mapped, dtype=np.uint8, count=job.size, offset=job.offset).reshape(shape)

    # ---- jobs ---------------------------------------------------------------------------------
    def submit(self, paths: Sequence[str], layout: ImageLayout) -> DecodeJob:
        """Start decoding ``paths`` (one part per live worker, in order); returns at once."""
        paths = list(paths)
        sample = int(np.prod(layout.sample_shape))
        with self._lock:
            if self._closed:
                raise RuntimeError("the decode processes were closed")
            job = DecodeJob(self, paths, layout, self._allocate(len(paths) * sample))
            live = self._live
            bounds = np.linspace(0, len(paths), min(len(live), len(paths)) + 1).astype(int)
            sends = []
            for k in range(len(bounds) - 1):
                pid = live[(k + self._turn) % len(live)]
                self._tasks[self._next_id] = (job, int(bounds[k]), int(bounds[k + 1]), pid)
                sends.append((pid, self._next_id, int(bounds[k]), int(bounds[k + 1])))
                self._next_id += 1
            self._turn += 1
            job.remaining = len(sends)
            if not live and paths:
                job.orphans.append((0, len(paths)))
            if not job.remaining:
                job.done.set()
        mode, height, width, channel_axis = layout.mode, layout.height, layout.width, layout.channel_axis
        for pid, task, start, end in sends:
            message = {"id": task, "shared": self._fd, "offset": job.offset + start * sample, "paths": paths[start:end],
                       "layout": [mode, height, width, channel_axis]}
            proc = self._by_pid[pid]
            try:
                with self._send_locks[pid]:
                    proc.stdin.write(json.dumps(message).encode() + b"\n")
                    proc.stdin.flush()
            except (OSError, ValueError):  # the worker is gone (broken pipe) or the pool closing
                self._lost(pid)
        return job

    def result(self, job: DecodeJob) -> Tuple[np.ndarray, Optional[Failure]]:
        """The job's uint8 samples (a view of the shared memory: copy before ``release``) and its first failure
        (lowest position) or None. Parts a dead worker held are decoded here."""
        while not job.done.wait(WAIT_POLL_S):
            if self._closed:
                raise RuntimeError("the decode processes were closed while a batch was decoded")
        out = self._view(job)
        for start, end in job.orphans:
            failure = decode_images(job.paths[start:end], job.layout, out[start:end])
            if failure is not None:
                job.failures[start + failure[0]] = (failure[1], failure[2])
        if not job.failures:
            return out, None
        first = min(job.failures)
        return out, (first,) + job.failures[first]

    def release(self, job: DecodeJob) -> None:
        """The job's region may be reused (at once when done, else when its workers finish)."""
        with self._lock:
            if job.done.is_set():
                if job.size:
                    self._regions.pop(job.offset, None)
            else:
                job.abandoned = True

    def _finish(self, job: DecodeJob) -> None:  # under the lock
        job.done.set()
        if job.abandoned and job.size:
            self._regions.pop(job.offset, None)

    def _answered(self, answer: dict) -> None:
        with self._lock:
            entry = self._tasks.pop(answer["id"], None)
            if entry is None:
                return
            job, start, end, _ = entry
            if answer.get("error"):  # the worker could not map the memory: decoded by the caller instead
                job.orphans.append((start, end))
            elif answer.get("failure"):
                position, kind, reason = answer["failure"]
                job.failures[start + int(position)] = (str(kind), str(reason))
            job.remaining -= 1
            if not job.remaining:
                self._finish(job)

    def _lost(self, pid: int) -> None:
        """A worker died (killed, out of memory) or cannot take tasks: its parts go to the callers."""
        with self._lock:
            if pid in self._live:
                self._live = [p for p in self._live if p != pid]
            for task, (job, start, end, owner) in list(self._tasks.items()):
                if owner == pid:
                    del self._tasks[task]
                    job.orphans.append((start, end))
                    job.remaining -= 1
                    if not job.remaining:
                        self._finish(job)

    def _read(self) -> None:
        """The reader thread: every worker's answers, until every worker has ended (closed stdout)."""
        selector = selectors.DefaultSelector()
        unread: Dict[int, bytes] = {}
        for proc in self._procs:
            selector.register(proc.stdout, selectors.EVENT_READ, proc)
            unread[proc.pid] = b""
        try:
            while selector.get_map():
                for key, _ in selector.select():
                    proc = key.data
                    data = os.read(proc.stdout.fileno(), 1 << 16)
                    if not data:
                        selector.unregister(proc.stdout)
                        self._lost(proc.pid)
                        continue
                    lines = (unread[proc.pid] + data).split(b"\n")
                    unread[proc.pid] = lines.pop()  # an incomplete last line waits for the rest
                    for line in lines:
                        self._answered(json.loads(line))
        finally:
            selector.close()

    def close(self) -> None:
        """End the workers (each after its current task, or killed after CLOSE_WAIT_S) and free the memory."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        for proc in self._procs:
            try:
                with getattr(self, "_send_locks", {}).get(proc.pid, threading.Lock()):
                    proc.stdin.close()
            except OSError:
                pass
        for proc in self._procs:
            try:
                proc.wait(CLOSE_WAIT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        reader = getattr(self, "_reader", None)
        if reader is not None:
            reader.join()
        for proc in self._procs:
            proc.stdout.close()
        with self._lock:
            self._map = None
            os.close(self._fd)


_shared: Optional[DecodePool] = None
_shared_pid = 0
_shared_lock = threading.Lock()


def shared_pool() -> DecodePool:
    """This process's decode processes (``decode_workers`` of them), started on first use."""
    global _shared, _shared_pid
    with _shared_lock:
        if _shared is None or _shared_pid != os.getpid() or _shared.closed:
            _shared, _shared_pid = DecodePool(decode_workers()), os.getpid()
        return _shared


@atexit.register
def close_shared_pool() -> None:
    """End this process's decode processes (at exit; a later ``shared_pool`` starts new ones)."""
    global _shared
    with _shared_lock:
        pool, _shared = (_shared if _shared_pid == os.getpid() else None), None
    if pool is not None:
        pool.close()
