"""The decode processes of a pool cache build (engine/data/decode_process.py): chunks handed out two at a time per
process over pipes, answers read as they come, a dead process's chunks decoded here, and the stop request asked
at least every STOP_POLL_S (split from cache_build, which decides what to decode and records it; on-the-fly batches use decode_pool)."""
from __future__ import annotations

import json
import logging
import os
import selectors
import subprocess
from typing import Any, Callable, Dict, List, Optional, Type

from nnconsole.engine.data import decode_process
from nnconsole.engine.helper_processes import python_module_command

log = logging.getLogger(__name__)

STOP_POLL_S = 0.5  # how often a pool build looks at the stop request while its workers decode


def run_pool(todo: List[int], task: Callable, finished: Callable, workers: int, stopping: Callable[[], bool],
             stopped: Type[BaseException]) -> Optional[Any]:
    """The chunks ``todo`` decoded by ``workers`` decode processes, two tasks in flight per process;
    chunks a dead worker held are decoded here instead. ``stopping()`` is asked at least every STOP_POLL_S:
    True ends the workers and raises ``stopped``; a worker that cannot write raises its OSError."""

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
        path, rows, paths, layout, _ = task(i)
        message = {"id": i, "path": path, "rows": list(rows), "paths": paths,
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
            if stopping():
                raise stopped("the dataset cache build was stopped")
            for key, _ in selector.select(timeout=STOP_POLL_S):
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
                    if answer.get("error"):
                        code, message = answer["error"]
                        raise OSError(code, message, task(answer["id"])[0])  # the file it could not write
                    failure = finished(answer["id"], (tuple(answer["failure"]) if answer["failure"] else None,
                                                      answer.get("digest")))
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
        if stopping():
            raise stopped("the dataset cache build was stopped")
        failure = finished(i, decode_process.decode_chunk(*task(i)))  # task(i) ends with the build's open files
        if failure is not None:
            return failure
    return None
