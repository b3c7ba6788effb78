"""A decode worker process: decodes chunks of image files into a cache entry's ``.npy`` files (a cache build) or
into memory shared with the training process (images decoded on the fly, ``on_the_fly``).

``cache_build`` and ``on_the_fly`` start one per core as ``python -m nnconsole.engine.data.decode_process`` (a fresh interpreter:
no fork of an MPI rank or of a threaded GUI, and no re-import of the caller's main module, which
multiprocessing's spawn would do). Protocol: one JSON task per line on stdin
``{"id", "path", "rows", "paths", "layout": [mode, height, width, channel_axis]}`` (``rows``: the sample
index each path's pixels go to; a build in first-use order scatters them), one JSON answer per
task on stdout ``{"id", "failure": null | [position, kind, reason], "digest": hex | null,
"error": null | [errno, message]}``; end of stdin ends the worker (also when its parent was killed: the pipe
closes with it). A task ``{"id", "shared": fd, "offset", "paths", "layout"}`` decodes ``paths`` into the
memory file ``fd`` (inherited from the parent) at byte ``offset`` instead, one sample after another; its
failure's position is the path's.

A chunk is decoded into memory, hashed (the SHA-256 the entry's meta records) and written with ``pwrite``
into space the build reserved: no memory map, so a full or failing disk is an OSError ("error"), never SIGBUS.
"""
from __future__ import annotations

import json
import mmap
import os
import signal
import sys
from pathlib import Path
from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from nnconsole.engine.data.cache import chunk_digest, npy_layout
from nnconsole.engine.data.decode import ImageLayout, decode_images

OpenFiles = Dict[str, Tuple[int, int]]  # .npy path -> (descriptor, data offset)
_open_files: OpenFiles = {}  # this worker process's
_shared_maps: Dict[int, mmap.mmap] = {}  # inherited memory file descriptor -> this worker's map of it

# (failure (sample index, kind, reason) or None, the chunk's digest (hex) when decoded)
ChunkResult = Tuple[Optional[Tuple[int, str, str]], Optional[str]]


def _file(path: str, files: OpenFiles) -> Tuple[int, int]:
    opened = files.get(path)
    if opened is None:
        offset = npy_layout(Path(path))[0]
        fd = os.open(path, os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
        opened = files[path] = (fd, offset)
    return opened


def _write(fd: int, data: memoryview, position: int) -> None:
    written = 0
    while written < len(data):
        written += os.pwrite(fd, data[written:], position + written)


def decode_chunk(path: str, rows: Sequence[int], paths: Sequence[str], layout: ImageLayout,
                 files: Optional[OpenFiles] = None) -> ChunkResult:
    """Decode ``paths[k]`` into sample ``rows[k]`` of the .npy at ``path``: (failure (naming the sample) or None,
    digest of the decoded samples in chunk order or None). Consecutive rows are written with one ``pwrite``.

    ``files``: the descriptors a build in this process keeps open (each build its own: two may run at once on
    different threads); by default this worker's. Raises OSError when the rows cannot be written."""
    fd, offset = _file(path, _open_files if files is None else files)
    pixels = np.empty((len(paths),) + layout.sample_shape, dtype=np.uint8)
    failure = decode_images(paths, layout, pixels)
    if failure is not None:
        return (int(rows[failure[0]]), failure[1], failure[2]), None
    data = memoryview(pixels).cast("B")
    size = pixels.nbytes // max(len(paths), 1)
    k = 0
    while k < len(rows):  # runs of consecutive rows: one write each
        end = k + 1
        while end < len(rows) and int(rows[end]) == int(rows[end - 1]) + 1:
            end += 1
        _write(fd, data[k * size:end * size], offset + int(rows[k]) * size)
        k = end
    return None, chunk_digest(data).hex()


def decode_shared(fd: int, offset: int, paths: Sequence[str], layout: ImageLayout
                  ) -> Optional[Tuple[int, str, str]]:
    """Decode ``paths`` into the memory file ``fd`` from byte ``offset`` (the samples one after another, as
    ``decode_images`` writes them); the failure ``decode_images`` reports, None when all were decoded.
    The file may have grown since this worker mapped it: mapped again, whole, when the samples pass the map."""
    size = len(paths) * int(np.prod(layout.sample_shape))
    mapped = _shared_maps.get(fd)
    if mapped is None or len(mapped) < offset + size:
        if mapped is not None:
            mapped.close()
        mapped = _shared_maps[fd] = mmap.mmap(fd, os.fstat(fd).st_size)
    out = np.frombuffer(mapped, dtype=np.uint8, count=size, offset=offset).reshape((len(paths),) + layout.sample_shape)
    try:
        return decode_images(paths, layout, out)
    finally:
        del out  # no view outlives the task: the map can be closed and made again


def close_maps(files: OpenFiles) -> None:
    """Close the files a build wrote into (it calls this when it ends)."""
    for fd, _ in files.values():
        os.close(fd)
    files.clear()


def main() -> int:
    # Ctrl-C in a terminal reaches the whole process group: the process that started this worker decides (a build
    # stops and kills its workers; a closing pool closes stdin), so no KeyboardInterrupt traceback here.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:  # use every core, whatever core the MPI rank that started the build was bound to
        os.sched_setaffinity(0, range(os.cpu_count() or 1))
    except (AttributeError, OSError):
        pass
    for line in sys.stdin:
        task = json.loads(line)
        answer = {"id": task["id"], "failure": None, "digest": None, "error": None}
        try:
            if "shared" in task:
                answer["failure"] = decode_shared(task["shared"], task["offset"], task["paths"],
                                                  ImageLayout(*task["layout"]))
            else:
                answer["failure"], answer["digest"] = decode_chunk(task["path"], task["rows"], task["paths"],
                                                                   ImageLayout(*task["layout"]))
        except OSError as exc:  # a full disk, a vanished file: the build reports it
            answer["error"] = [exc.errno or 0, exc.strerror or str(exc)]
        try:
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()
        except BrokenPipeError:  # the parent is gone (killed): nobody wants the rest, nothing to flush
            os._exit(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
