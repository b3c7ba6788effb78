"""The host-level dataset index at ImageNet's row count (issue 31): peak resident memory of the launcher and of
each worker, and the time to the first iteration, cold (no cache) and warm, for a CSV of ``--rows`` rows cycling
over ``--files`` small grey PNGs, the digits CNN at batch 256 on ``--workers`` CPU workers; and the same project
on a 1,500-row slice, for the issue's ratio (first iteration at most 20x the time Python's csv module takes to
read the CSV once, above the slice's).

    .venv/bin/python bench/data_index.py [--rows 1281167] [--files 1000] [--workers 2] [--before TREE]

Each run is ended (STOP file) as soon as its first training record is written (log interval 1). ``--before``
names an older checkout, measured through this venv (as bench/data_scale.py does). Data goes to a temp folder,
removed at the end.
"""
from __future__ import annotations

import argparse
import csv
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from typing import Dict, List, Optional, Tuple

import numpy as np
from PIL import Image

from common import PYTHON, bench_env, machine, pin_threads, run_main, table  # noqa: E402
from data_projects import make_project  # noqa: E402
from data_scale import _status, before_env  # noqa: E402

MIB = 2 ** 20


def make_rows(folder: str, rows: int, files: int, valid_rows: int) -> None:
    """``folder/train.csv`` (``rows`` rows) and ``validation.csv`` cycling over ``files`` 8x8 grey PNGs."""
    os.makedirs(os.path.join(folder, "img"), exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(files):
        Image.fromarray(rng.integers(0, 256, (8, 8), dtype=np.uint8), "L").save(os.path.join(folder, "img",
                                                                                            f"{i}.png"))
    for name, count in (("train.csv", rows), ("validation.csv", valid_rows)):
        with open(os.path.join(folder, name), "w") as fh:
            fh.write("x:image,y:label\n")
            for start in range(0, count, 100_000):
                fh.write("".join(f"img/{i % files}.png,{i % 10}\n" for i in range(start, min(start + 100_000, count))))


def csv_read_seconds(path: str) -> float:
    started = time.perf_counter()
    with open(path, newline="") as fh:
        for _ in csv.reader(fh):
            pass
    return time.perf_counter() - started


def _children(pid: int) -> List[int]:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
                if int(fields[1]) == pid:
                    out.append(int(name))
            except (OSError, IndexError, ValueError):
                pass
    return out


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read()
    except OSError:
        return b""


def first_iteration(project: str, workers: int, out: str, env: dict, timeout: float = 3600
                    ) -> Tuple[Optional[float], Dict[str, int], str]:
    """Run ``nnconsole train`` until its first training record; (seconds to it or None, peak RSS per process
    role, output tail). Roles: 'launcher' (the CLI process) and 'worker <pid>'."""
    cmd = [PYTHON, "-m", "nnconsole.engine.cli.main", "train", project, "--gpus", str(workers), "-o", out, "-q"]
    earlier = set(glob.glob(os.path.join(out, "*")))  # runs before this one (the cold run's, for a warm one)
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            cwd=os.path.dirname(project))
    peaks: Dict[str, int] = {}
    first: List[float] = []
    done = threading.Event()

    def sample() -> None:
        seen = [proc.pid]
        while not done.is_set():
            frontier = [proc.pid]
            while frontier:  # every descendant: mpiexec's workers included
                pid = frontier.pop()
                kids = _children(pid)
                frontier += kids
                seen += [k for k in kids if k not in seen]
            for pid in seen:
                role = "launcher" if pid == proc.pid else (
                    f"worker {pid}" if b"nnconsole.engine.train.worker" in _cmdline(pid) else None)
                if role:
                    rss = _status(pid).get("VmHWM", 0)
                    peaks[role] = max(peaks.get(role, 0), rss)
            if not first:
                for metrics in glob.glob(os.path.join(out, "*", "metrics.jsonl")):
                    if os.path.dirname(metrics) in earlier:
                        continue
                    with open(metrics, errors="replace") as fh:
                        if '"train"' in fh.read():
                            first.append(time.perf_counter() - started)
                            with open(os.path.join(os.path.dirname(metrics), "STOP"), "w"):
                                pass
            time.sleep(0.05)
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        output, _ = proc.communicate()
    finally:
        done.set()
        sampler.join()
    return (first[0] if first else None), peaks, output[-2000:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_281_167)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--before", default="", help="an older checkout, measured through this venv")
    args = parser.parse_args()
    pin_threads()
    print(f"# data_index: {machine()}; load {os.getloadavg()[0]:.1f}")
    scratch = tempfile.mkdtemp(prefix="nnconsole-bench-index-")
    trees = [("after", bench_env())] + ([("before", before_env(args.before))] if args.before else [])
    rows_out = []
    result = {}
    try:
        for label, rows in (("slice", 1500), ("full", args.rows)):
            folder = os.path.join(scratch, label)
            make_rows(folder, rows, args.files, min(50_000, max(rows // 25, 100)))
            project = make_project(folder, (1, 8, 8), "digits_cnn", epochs=1, batch=256, workers=args.workers)
            with open(project) as fh:
                text = fh.read().replace("log_interval: 20", "log_interval: 1")
            with open(project, "w") as fh:
                fh.write(text)
            if label == "full":
                result["csv_read_s"] = csv_read_seconds(os.path.join(folder, "train.csv"))
            for tree, env in trees:
                for state in ("cold", "warm"):
                    seconds, peaks, tail = first_iteration(project, args.workers, os.path.join(folder, f"out-{tree}"),
                                                           env)
                    workers = sorted(v for k, v in peaks.items() if k.startswith("worker"))
                    rows_out.append((tree, label, f"{rows:,}", state, "-" if seconds is None else f"{seconds:.1f}",
                                     f"{peaks.get('launcher', 0) / MIB:.0f}",
                                     ", ".join(f"{w / MIB:.0f}" for w in workers)))
                    result[f"{tree}-{label}-{state}"] = {"first_iteration_s": seconds, "peaks_MiB": {
                        k: round(v / MIB, 1) for k, v in peaks.items()}}
                    if seconds is None:
                        print(tail, file=sys.stderr)
                for cache in glob.glob(os.path.join(folder, ".nnconsole-cache")):  # the next tree starts cold
                    shutil.rmtree(cache, ignore_errors=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(table(("tree", "dataset", "rows", "cache", "first iteration s", "launcher peak RSS MiB",
                 "worker peak RSS MiB"), rows_out,
                title=f"Time to the first iteration and peak RSS, {args.workers} workers, rows cycling over "
                f"{args.files} 8x8 PNGs (Python's csv reads the full CSV in {result.get('csv_read_s', 0):.2f} s)"))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
