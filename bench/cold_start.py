"""A cold start on generated images (issue 31: the cache build overlapped with the first epoch): the time from
``nnconsole train`` to its first iteration and to the end of a one-epoch run, with no dataset cache yet, for
``--samples`` 32x32 RGB PNGs (CIFAR-sized CNN, batch 64, 1 CPU worker), this tree against ``--before TREE``
(an older checkout, measured through this venv), the two taking turns for ``--rounds`` rounds.

    .venv/bin/python bench/cold_start.py [--samples 20000] [--rounds 2] [--before TREE] [--quick]

Data goes to a temp folder, removed at the end. Times are read from a watcher that polls the run's records
every 20 ms: "first iteration" is the first training record (log interval 1), "cache built" the training
set's last cache record.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import time
from typing import Dict, List, Optional

from common import PYTHON, bench_env, machine, median, run_main, scratch, table  # noqa: E402
from data_projects import make_dataset, make_project  # noqa: E402
from data_scale import before_env  # noqa: E402


def _records(folder: str) -> List[dict]:
    out = []
    for path in glob.glob(os.path.join(folder, "results", "*", "*", "metrics.jsonl")):
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    return out


def cold_run(folder: str, project: str, env: Dict[str, str]) -> Dict[str, Optional[float]]:
    """One cold one-epoch run: seconds to the first training record, to the cache built, to the end."""
    shutil.rmtree(os.path.join(folder, ".nnconsole-cache"), ignore_errors=True)
    shutil.rmtree(os.path.join(folder, "results"), ignore_errors=True)
    started = time.monotonic()
    proc = subprocess.Popen([PYTHON, "-m", "nnconsole.engine.cli.main", "train", project, "-q"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    first = built = None
    while proc.poll() is None:
        time.sleep(0.02)
        records = _records(folder)
        if first is None and any(r.get("type") == "train" for r in records):
            first = time.monotonic() - started
        if built is None and any(r.get("type") == "dataset_cache" and r.get("dataset") == "training"
                                 and r.get("done") == r.get("total") for r in records):
            built = time.monotonic() - started
    ended = time.monotonic() - started
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.read()[-3000:])
    return {"first": first, "built": built, "end": ended}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--before", default="", help="an older checkout, measured through this venv")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    samples = 2_000 if args.quick else args.samples
    folder = scratch("cold-start-")
    try:
        make_dataset(folder, samples, size=32, channels=3, validation=1000)
        project = make_project(folder, (3, 32, 32), "cifar_cnn", epochs=1, batch=64)
        with open(project, encoding="utf-8") as fh:
            text = fh.read()
        with open(project, "w", encoding="utf-8") as fh:
            fh.write(text.replace("log_interval: 20", "log_interval: 1"))
        trees = [("after (this tree)", bench_env())]
        if args.before:
            trees.insert(0, (f"before ({args.before})", before_env(args.before)))
        results: Dict[str, List[Dict[str, Optional[float]]]] = {name: [] for name, _ in trees}
        for _ in range(args.rounds):
            for name, env in trees:
                results[name].append(cold_run(folder, project, env))

        def fmt(values: List[Optional[float]]) -> str:
            known = [v for v in values if v is not None]
            return f"{median(known):.2f} ({', '.join(f'{v:.2f}' for v in known)})" if known else "-"
        rows = [[name, fmt([r["first"] for r in runs]), fmt([r["built"] for r in runs]),
                 fmt([r["end"] for r in runs])] for name, runs in results.items()]
        print(machine())
        print(table(["tree", "first iteration s (median; runs)", "training cache built s", "one cold epoch s"],
                    rows, title=f"Cold start, {samples:,} 32x32 PNGs, cifar_cnn, batch 64, 1 CPU worker, "
                                f"{args.rounds} rounds"))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(run_main(main))
