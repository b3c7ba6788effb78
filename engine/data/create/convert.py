"""Converting a dataset's images on every core: one process per core, each with its own share and its own pipe.

Each worker takes every N-th image (the images of a dataset cost about the same) and reports each result on
a pipe only it writes, so stopping is always possible: the parent ends the workers and nothing can be left
holding a lock that another process waits for (``multiprocessing.Pool.terminate`` deadlocked here when it
stopped a pool whose task queue was full). A worker that dies (out of memory, killed) fails only the images
it had left, with a reason. Workers die with their parent (Linux), so a killed command leaves none behind.
"""
from __future__ import annotations

import multiprocessing
import signal
import time
from multiprocessing.connection import Connection, wait
from typing import Callable, List, Optional, Sequence, Tuple

from PIL import Image
from nnconsole.engine.data.create.shaping import ImageShapeError, read_image, save_png, shape_image

Task = Tuple[str, str, int, int, str, int]  # source, target PNG, width, height, mode, channels
Progress = Callable[[int, int, float], None]  # done, total, seconds elapsed
StopCheck = Callable[[int, str], None]  # called with (index, reason) for a failure; raises to stop


def convert_one(task: Task) -> Optional[str]:
    """Convert one image (its folder exists); the reason it failed, or None."""
    source, target, width, height, mode, channels = task
    try:
        save_png(target, shape_image(read_image(source), width, height, mode, channels))
    except ImageShapeError as exc:
        return str(exc)
    except OSError as exc:
        return f"{exc.strerror or exc}"
    except Exception as exc:  # noqa: BLE001 - one odd file must not end the run: it is reported and left out
        return f"{type(exc).__name__}: {exc}"
    return None


def _worker(share: List[Tuple[int, Task]], pipe: Connection) -> None:
    """A worker process: convert its share, sending (index, reason) for each image."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C and the GUI's stop go to the parent, which ends us
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: die with the parent
    except (OSError, AttributeError):
        pass
    try:
        for index, task in share:
            pipe.send((index, convert_one(task)))
    except (BrokenPipeError, EOFError):
        pass
    finally:
        pipe.close()


def convert_all(tasks: Sequence[Task], workers: int, progress: Optional[Progress] = None,
                on_failure: Optional[StopCheck] = None) -> List[Optional[str]]:
    """Each task's failure reason (None when converted), on ``workers`` processes (here when 1).

    ``progress`` is called after each image; ``on_failure`` may raise to stop everything (the workers are
    ended before the exception leaves).
    """
    results: List[Optional[str]] = [None] * len(tasks)
    start = time.monotonic()
    done = 0
    if progress:
        progress(0, len(tasks), 0.0)

    def record(index: int, reason: Optional[str]) -> None:
        nonlocal done
        results[index] = reason
        done += 1
        if reason and on_failure:
            on_failure(index, reason)
        if progress:
            progress(done, len(tasks), time.monotonic() - start)

    workers = max(1, min(workers, len(tasks)))
    if workers == 1:
        for index, task in enumerate(tasks):
            record(index, convert_one(task))
        return results

    Image.init()  # every image plugin imported before the fork: the workers import nothing
    context = multiprocessing.get_context("fork")
    processes, pipes, left = [], {}, {}
    try:
        for w in range(workers):
            share = [(i, tasks[i]) for i in range(w, len(tasks), workers)]
            reader, writer = context.Pipe(duplex=False)
            process = context.Process(target=_worker, args=(share, writer), daemon=True)
            process.start()
            writer.close()
            processes.append(process)
            pipes[reader] = process
            left[reader] = {i for i, _ in share}
        while pipes:
            for reader in wait(list(pipes)):
                try:
                    index, reason = reader.recv()
                except EOFError:  # finished, or died: what it had left failed
                    process = pipes.pop(reader)
                    process.join()
                    for index in sorted(left.pop(reader)):
                        record(index, f"the converting process ended (exit code {process.exitcode}) first")
                    continue
                left[reader].discard(index)
                record(index, reason)
    finally:
        for process in processes:
            if process.is_alive():
                process.kill()
        for process in processes:
            process.join()
        for reader in pipes:
            reader.close()
    return results
