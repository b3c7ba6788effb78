"""A worker process of a dataset cache build: decodes chunks of image files into the entry's ``.npy`` files.

``cache_build`` starts one per core as ``python -m nnconsole.engine.data.decode_process`` (a fresh interpreter:
no fork of an MPI rank or of a threaded GUI, and no re-import of the caller's main module, which
multiprocessing's spawn would do). Protocol: one JSON task per line on stdin
``{"id", "path", "start", "paths", "layout": [mode, height, width, channel_axis]}``, one JSON answer per
task on stdout ``{"id", "failure": null | [position, kind, reason]}``; end of stdin ends the worker.
"""
from __future__ import annotations

import json
import os
import sys
from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from nnconsole.engine.data.decode import ImageLayout, decode_images

_open_maps: Dict[str, np.ndarray] = {}


def decode_chunk(path: str, start: int, paths: Sequence[str], layout: ImageLayout) -> Optional[Tuple[int, str, str]]:
    """Decode ``paths`` into rows start.. of the .npy at ``path``; the failure (sample index, kind, reason) or None."""
    out = _open_maps.get(path)
    if out is None:
        out = _open_maps[path] = np.lib.format.open_memmap(path, mode="r+")
    failure = decode_images(paths, layout, out[start:start + len(paths)])
    if failure is not None:
        return start + failure[0], failure[1], failure[2]
    return None


def close_maps() -> None:
    _open_maps.clear()


def main() -> int:
    try:  # use every core, whatever core the MPI rank that started the build was bound to
        os.sched_setaffinity(0, range(os.cpu_count() or 1))
    except (AttributeError, OSError):
        pass
    for line in sys.stdin:
        task = json.loads(line)
        failure = decode_chunk(task["path"], task["start"], task["paths"], ImageLayout(*task["layout"]))
        sys.stdout.write(json.dumps({"id": task["id"], "failure": failure}) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
