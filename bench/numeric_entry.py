"""Numeric-only datasets held once per host (issue 31): what loading a CSV of ``--rows`` rows x ``--columns``
numeric columns keeps in each process and how high its memory peaks, loaded into memory as every rank did
before (no image column: no cache entry) and through the host's cache entry (built cold, opened warm).

    .venv/bin/python bench/numeric_entry.py [--rows 1000000] [--columns 8] [--quick]

Each load runs in a fresh process (one per rank in a run). Figures: load seconds; "held B/row": the bytes of
the dataset's arrays in the process's own memory (not memory-mapped), per row, for the whole run; "anon B/row":
the process's anonymous memory after the load (freed heap returned: malloc_trim) less before it, per row;
"peak MiB": the largest resident set during the load less the resident set before it; "mapped MiB": file-backed
resident memory after reading every value once (the entry's columns: shared by every rank through the page
cache, counted once per host). Goal: a warm open holds no array in private memory and peaks at under a tenth
of the in-memory load's peak.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import time
from typing import Dict

from common import PYTHON, bench_env, machine, run_main, scratch, table  # noqa: E402

MIB = 2 ** 20


def write_csv(path: str, rows: int, columns: int) -> None:
    """``rows`` rows: ``columns - 1`` feature columns (x__0..) and a class label y (0..9)."""
    import numpy as np

    rng = np.random.default_rng(0)
    with open(path, "w") as fh:
        fh.write(",".join([f"x__{i}" for i in range(columns - 1)] + ["y"]) + "\n")
        for start in range(0, rows, 100_000):
            n = min(100_000, rows - start)
            x = rng.standard_normal((n, columns - 1)).round(5)
            y = np.arange(start, start + n) % 10
            fh.write("".join(",".join(map(str, r)) + f",{c}\n" for r, c in zip(x.tolist(), y.tolist())))


def _status() -> Dict[str, int]:
    """kB figures of this process: VmRSS, VmHWM, RssFile (/proc/self/status) and Anonymous (smaps_rollup)."""
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssFile"):
                out[key] = int(value.split()[0])
    with open("/proc/self/smaps_rollup") as fh:
        for line in fh:
            if line.startswith("Anonymous:"):
                out["Anonymous"] = int(line.split()[1])
    return out


def child(mode: str, csv_path: str, cache_dir: str, columns: int) -> None:
    """One load in this fresh process; prints its figures as JSON."""
    import ctypes
    import gc

    import numpy as np

    from nnconsole.engine.data.loading import load_dataset

    shapes = {"x": (columns - 1,), "y": (1,)}
    gc.collect()
    before = _status()
    with open("/proc/self/clear_refs", "w") as fh:  # VmHWM from here: the load's own peak
        fh.write("5")
    started = time.perf_counter()
    ds = load_dataset(csv_path, shapes, cache=mode != "memory", cache_dir=cache_dir, label_classes={"y": 10})
    seconds = time.perf_counter() - started
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)  # freed heap back to the system: anonymous memory is what is held
    after = _status()
    held = sum(a.nbytes for a in ds.numbers.values() if not isinstance(a, np.memmap))
    total = float(sum(float(ds.numbers[n].sum(dtype="float64")) for n in ("x", "y")))  # every value read once
    read = _status()
    print(json.dumps({"seconds": seconds, "held": held, "kept_kb": after["Anonymous"] - before["Anonymous"],
                      "peak_kb": after["VmHWM"] - before["VmRSS"], "mapped_kb": read["RssFile"] - before["RssFile"],
                      "rows": ds.size, "total": total,
                      "memmap": type(ds.numbers["x"]).__name__ == "memmap"}))


def measure(mode: str, csv_path: str, cache_dir: str, columns: int) -> dict:
    out = subprocess.run([PYTHON, os.path.abspath(__file__), "--child", mode, csv_path, cache_dir, str(columns)],
                         capture_output=True, text=True, env=bench_env(1), check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--columns", type=int, default=8)
    parser.add_argument("--quick", action="store_true", help="100,000 rows")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], args.child[2], int(args.child[3]))
        return 0
    rows = 100_000 if args.quick else args.rows
    folder = scratch("numeric-entry-")
    try:
        csv_path = os.path.join(folder, "train.csv")
        write_csv(csv_path, rows, args.columns)
        started = time.perf_counter()
        with open(csv_path, newline="") as fh:
            for _ in csv.reader(fh):
                pass
        t_csv = time.perf_counter() - started
        cache_dir = os.path.join(folder, "cache")
        results = {mode: measure(mode, csv_path, cache_dir, args.columns) for mode in ("memory", "cold", "warm")}
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(machine())
    print(f"{rows:,} rows x {args.columns} numeric columns ({os.path.basename(csv_path)}); Python's csv module "
          f"reads it in {t_csv:.2f} s\n")
    labels = {"memory": "in memory (every rank, before)", "cold": "entry, cold (one process builds)",
              "warm": "entry, warm (every other rank)"}
    print(table(["load", "seconds", "held B/row", "anon B/row", "peak MiB", "mapped MiB (shared)", "memory-mapped"],
                [[labels[m], f"{r['seconds']:.2f}", f"{r['held'] / rows:.1f}", f"{r['kept_kb'] * 1024 / rows:.1f}", f"{r['peak_kb'] / 1024:.0f}",
                  f"{r['mapped_kb'] / 1024:.0f}", "yes" if r["memmap"] else "no"] for m, r in results.items()]))
    same = len({r["total"] for r in results.values()}) == 1
    warm, memory = results["warm"], results["memory"]
    met = same and warm["held"] == 0 and warm["peak_kb"] <= memory["peak_kb"] / 10
    print(f"\nsame values in every load: {'yes' if same else 'NO'}; goal (warm holds no array privately, peaks "
          f"< 1/10 of the in-memory load): {'met' if met else 'missed'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(run_main(main))
