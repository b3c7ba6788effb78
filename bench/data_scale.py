"""Datasets at scale (issue 18): cache build time against nnabla's cached data iterator, per-worker memory with
1 and 2 workers against the float32 path this replaced, the share of each iteration spent waiting for data,
and a dataset whose cache is 2x larger than the memory limit.

    .venv/bin/python bench/data_scale.py [--samples N] [--quick] [--before TREE] [--skip-limit]

Generates CIFAR-sized data (``--samples`` 32x32x3 PNGs, default 50,000) into a temp folder (never
committed; removed at the end). ``--before TREE`` names a checkout of the float32 path (e.g. made with
``git archive bad902d | tar -x -C TREE``): its workers are measured through this venv with nnconsole mapped to
that tree. The larger-than-memory case runs in a memory cgroup (cgroup v1 or v2, as root) and is skipped
where none can be made. Exit status: 0 when every goal is met, 1 when one is missed, 2 when a run failed.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from typing import Dict, List, Optional, Tuple

from common import PYTHON, ROOT, bench_env, machine, pin_threads, run_main, table  # noqa: E402
from data_projects import make_dataset, make_project, project_for  # noqa: E402

GOALS = {"build": 1.5, "rss": 0.25, "wait": 0.05, "limit": 2.0}


# ---- 1. cache build time ------------------------------------------------------------------------------
CPU_SECONDS: List[float] = []  # CPU time (user + system, child processes included) of each _timed run


def _timed(code: str, env: Optional[dict] = None) -> float:
    """Seconds the measured call took (printed by ``code``); its process's CPU time goes to CPU_SECONDS."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([PYTHON, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                         env=env or bench_env(), timeout=3600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU_SECONDS.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    if out.returncode != 0:
        raise RuntimeError(out.stdout[-2000:] + out.stderr[-3000:])
    return float(out.stdout.strip().splitlines()[-1])


def build_ours(csv: str, cache: str, shape: Tuple[int, ...], workers: int) -> float:
    return _timed(f"""
        import time
        from nnconsole.engine.data.loading import load_dataset
        t = time.perf_counter()
        load_dataset({csv!r}, {{"x": {tuple(shape)!r}, "y": (1,)}}, cache_dir={cache!r}, build_workers={workers})
        print(time.perf_counter() - t)
    """)


def build_nnabla(csv: str, cache: str) -> float:
    os.makedirs(cache, exist_ok=True)
    return _timed(f"""
        import time
        from nnabla.utils.data_iterator import data_iterator_csv_dataset
        t = time.perf_counter()
        it = data_iterator_csv_dataset({csv!r}, 64, shuffle=False, normalize=True, with_memory_cache=False,
                                       with_file_cache=True, cache_dir={cache!r})
        print(time.perf_counter() - t)
        it.close()
    """)


# ---- 2. per-worker memory -----------------------------------------------------------------------------
def _status(pid: int) -> Dict[str, int]:
    fields = {}
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                    fields[key] = int(value.split()[0]) * 1024
    except OSError:
        pass
    return fields


def _worker_pids() -> List[int]:
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as fh:
                    if b"nnconsole.engine.train.worker" in fh.read():
                        pids.append(int(name))
            except OSError:
                pass
    return pids


def train_cli(project: str, workers: int, out: str, env: dict, cgroup: Optional[str] = None,
              timeout: float = 3600) -> Tuple[int, Dict[int, Dict[str, int]], str, float]:
    """``nnconsole train`` (or ``cgroup``'s member); returns (exit status, per-worker peak memory, output tail, wall)."""
    cmd = [PYTHON, "-m", "nnconsole.engine.cli.main", "train", project, "--gpus", str(workers), "-o", out, "-q"]
    if cgroup:
        cmd = ["sh", "-c", f'echo $$ > "{cgroup}/cgroup.procs" && exec "$@"', "sh"] + cmd
    peaks: Dict[int, Dict[str, int]] = {}
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            cwd=os.path.dirname(project))
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            for pid in _worker_pids():
                now = _status(pid)
                peak = peaks.setdefault(pid, {})
                for key, value in now.items():
                    peak[key] = max(peak.get(key, 0), value)
            time.sleep(0.05)
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        output, _ = proc.communicate(timeout=timeout)
    finally:
        done.set()
        sampler.join()
    return proc.returncode, peaks, output[-3000:], time.perf_counter() - started


def before_env(tree: str) -> dict:
    """Processes that import nnconsole from ``tree`` (an older checkout) through this venv's editable install."""
    shim = tempfile.mkdtemp(prefix="nnconsole-before-shim-")
    with open(os.path.join(shim, "sitecustomize.py"), "w") as fh:
        fh.write(textwrap.dedent(f"""
            import __editable___nnconsole_0_1_0_finder as finder
            finder.MAPPING.update({{k: v.replace({ROOT!r}, {os.path.abspath(tree)!r})
                                   for k, v in finder.MAPPING.items()}})
        """))
    env = bench_env()
    env["PYTHONPATH"] = shim + os.pathsep + env.get("PYTHONPATH", "")
    return env


# ---- 3. data wait -------------------------------------------------------------------------------------
# One in-process training run (as tests/support/training.train_in_process does): the time the training thread spends taking and feeding its batches ("wait")
# against the time of Trainer.run; prefetch off, or as the trainer chooses it (depth in the row).
WAIT_SCRIPT = """
import json, time
import nnabla as nn
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.protocol import RunStatus
from nnconsole.engine.train import prefetch, trainer as train
from nnconsole.engine.comm.cpu import SingleComm
from nnconsole.engine.launch.launcher import LaunchRequest, prepare_run
from nnconsole.engine.project.io import load_project
from nnconsole.engine.rundir.launch_options import WorkerOptions
if {depth} == 0:
    prefetch.TRAINING_DEPTH = 0
depths = []
real_init = prefetch.Prefetcher.__init__
def recording_init(self, make, items, depth=2, name="prefetch"):
    depths.append(depth); real_init(self, make, items, depth, name)
prefetch.Prefetcher.__init__ = recording_init
waited = [0.0]
real_next, real_feed = prefetch.Prefetcher.__next__, train.Trainer._feed_prepared
def timed_next(self):
    t = time.perf_counter(); value = real_next(self); waited[0] += time.perf_counter() - t; return value
def timed_feed(self, graph, batch):
    t = time.perf_counter(); real_feed(self, graph, batch); waited[0] += time.perf_counter() - t
prefetch.Prefetcher.__next__, train.Trainer._feed_prepared = timed_next, timed_feed
run_dir = prepare_run(load_project({project!r}), LaunchRequest(output={out!r}), workers=1)
trainer = train.Trainer(run_dir, SingleComm(), WorkerOptions())
trainer.setup()
t = time.perf_counter()
assert trainer.run() == RunStatus.FINISHED
spent = time.perf_counter() - t
trainer.close()
iterations = [r for r in runs.iter_metrics(run_dir, "train")][-1]["iteration"]
print(json.dumps({{"wait": waited[0], "run": spent, "iterations": iterations, "depth": max(depths)}}))
"""


def data_wait(project: str, out: str, depth: int) -> Dict[str, float]:
    """``depth`` 0: prefetch off; otherwise the trainer's own choice."""
    code = WAIT_SCRIPT.format(depth=depth, project=project, out=out)
    proc = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, env=bench_env(), timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(proc.stdout[-2000:] + proc.stderr[-3000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ---- 4. larger than memory ----------------------------------------------------------------------------
def make_cgroup(limit: int) -> Optional[str]:
    """A memory cgroup limited to ``limit`` bytes (page cache included), or None where none can be made."""
    for base, files in (("/sys/fs/cgroup", ("memory.max", "memory.swap.max")),
                        ("/sys/fs/cgroup/memory", ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes"))):
        path = os.path.join(base, f"nnconsole-bench-{os.getpid()}")
        if not os.path.exists(os.path.join(base, files[0] if base.endswith("memory") else "cgroup.controllers")):
            continue
        try:
            os.mkdir(path)
            with open(os.path.join(path, files[0]), "w") as fh:
                fh.write(str(limit))
            try:
                with open(os.path.join(path, files[1]), "w") as fh:
                    fh.write(str(limit) if base.endswith("memory") else "0")
            except OSError:
                pass  # no swap accounting: there is no swap on the bench machine either
            return path
        except OSError:
            try:
                os.rmdir(path)
            except OSError:
                pass
    return None


def cgroup_peak(path: str) -> Optional[int]:
    for name in ("memory.max_usage_in_bytes", "memory.peak"):
        try:
            with open(os.path.join(path, name)) as fh:
                return int(fh.read().strip())
        except OSError:
            continue
    return None


def cache_bytes(folder: str) -> int:
    total = 0
    for root, _, files in os.walk(os.path.join(folder, ".nnconsole-cache")):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files if f.endswith(".npy"))
    return total


# ---- main ----------------------------------------------------------------------------------------------
def bench_build(train_csv: str, scratch: str, samples: int) -> Tuple[str, bool]:
    rows, ratios = [], []
    for rnd in range(2 if samples <= 20_000 else 1):
        load = os.getloadavg()[0]
        nn_s = build_nnabla(train_csv, os.path.join(scratch, f"nncache{rnd}"))
        ours = build_ours(train_csv, os.path.join(scratch, f"ours{rnd}"), (3, 32, 32), os.cpu_count() or 1)
        one = build_ours(train_csv, os.path.join(scratch, f"ours1-{rnd}"), (3, 32, 32), 1)
        nn_cpu, ours_cpu, one_cpu = CPU_SECONDS[-3:]
        rows.append((rnd + 1, load, nn_s, ours, one, nn_s / ours, nn_s / one, nn_cpu, ours_cpu, one_cpu,
                     nn_cpu / ours_cpu))
        ratios.append(nn_s / ours)
    text = table(("round", "load", "nnabla s", f"ours s ({os.cpu_count()} processes)", "ours s (1 process)",
                  "nnabla / ours", "nnabla / ours (1 process)", "nnabla CPU s", "ours CPU s", "ours CPU s (1)",
                  "nnabla / ours CPU"), rows,
                 title=f"1. Cache build, {samples:,} PNGs (goal: nnabla / ours >= {GOALS['build']} in wall time)")
    return text, min(ratios) >= GOALS["build"]


def bench_memory(folder: str, scratch: str, trees: List[Tuple[str, dict]]) -> Tuple[str, Optional[List[float]]]:
    rows = []
    peak: Dict[Tuple[str, int], float] = {}
    for label, env in trees:
        project = project_for(env, folder, (3, 32, 32), "pool_linear", 1, 64, 1, "train.csv", f"-{label}")
        code, _, tail, _ = train_cli(project, 1, os.path.join(scratch, f"warm-{label}"), env)  # builds the cache
        if code != 0:
            raise RuntimeError(f"{label}: warm-up training failed:\n{tail}")
        for workers in (1, 2):
            code, peaks, tail, wall = train_cli(project, workers, os.path.join(scratch, f"runs-{label}"), env)
            if code != 0:
                raise RuntimeError(f"{label} training with {workers} workers failed:\n{tail}")
            hwm = max(p.get("VmHWM", 0) for p in peaks.values())
            peak[(label, workers)] = hwm
            rows.append((label, workers, len(peaks), hwm / 2**20, max(p.get("RssAnon", 0) for p in peaks.values()) / 2**20,
                         max(p.get("RssFile", 0) for p in peaks.values()) / 2**20, wall))
    text = table(("tree", "workers", "processes matched", "peak RSS per worker MB", "peak RssAnon MB",
                  "peak RssFile MB (page cache, shared)", "run wall s"), rows,
                 title="2. Per-worker resident memory, CIFAR-sized data, 1 epoch (cache already built)")
    if len(trees) < 2:
        return text, None
    ratios = [peak[("after", w)] / peak[("before", w)] for w in (1, 2)]
    return text + (f"\nafter / before peak RSS per worker: 1 worker {ratios[0]:.3f}, 2 workers {ratios[1]:.3f} "
                   f"(goal <= {GOALS['rss']})"), ratios


def bench_wait(folder: str, scratch: str, subset: int) -> Tuple[str, bool]:
    rows, met = [], True
    digits = os.path.join(scratch, "digits")
    shutil.copytree(os.path.join(ROOT, "project_templates", "digits_cnn"), digits)
    digits_project = make_project(os.path.join(digits, "data"), (1, 8, 8), "digits_cnn", epochs=5, batch=32)
    with open(os.path.join(folder, "train.csv")) as fh:
        lines = fh.read().splitlines()[:subset + 1]
    with open(os.path.join(folder, "subset.csv"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    cifar = make_project(folder, (3, 32, 32), "cifar_cnn", epochs=1, batch=64, training="subset.csv")
    for name, proj in (("digits CNN (8x8x1, batch 32, 5 epochs)", digits_project),
                       (f"CIFAR-sized CNN (32x32x3, batch 64, {subset:,} samples)", cifar)):
        for depth in (0, None):
            r = data_wait(proj, os.path.join(scratch, "wait"), 0 if depth == 0 else 2)
            share = r["wait"] / r["run"]
            rows.append((name, "off" if depth == 0 else f"default ({r['depth']})", r["iterations"],
                         1000 * r["run"] / r["iterations"], 1000 * r["wait"] / r["iterations"], share))
            met = met and (depth == 0 or share <= GOALS["wait"])
    return table(("model", "prefetch depth", "iterations", "ms/iteration (run)", "data wait ms/iteration",
                  "data wait share"), rows,
                 title=f"3. Time the training thread waits for data (goal with prefetch: <= {GOALS['wait']:.0%})"), met


def bench_limit(scratch: str, trees: List[Tuple[str, dict]], limit: int) -> Tuple[str, bool]:
    cgroup = make_cgroup(limit)
    if cgroup is None:
        return "4. larger than memory: skipped (no memory cgroup can be made here; run as root)", True
    met = True
    try:
        big, side = os.path.join(scratch, "big"), 128
        count = int(GOALS["limit"] * limit / (3 * side * side)) + 200
        make_dataset(big, count, size=side, fmt="bmp", validation=200, distinct=500)
        rows = []
        for label, env in trees:
            project = project_for(env, big, (3, side, side), "pool_linear", 1, 64, 1, "train.csv", f"-{label}")
            code, peaks, tail, wall = train_cli(project, 1, os.path.join(scratch, f"big-{label}"), env, cgroup=cgroup)
            size = cache_bytes(big)
            last = (tail.strip().splitlines() or [""])[-1][:70]
            rows.append((label, limit / 2**20, size / 2**20, size / limit, code,
                         "finished" if code == 0 else f"failed: {last}",
                         max((p.get("VmHWM", 0) for p in peaks.values()), default=0) / 2**20,
                         (cgroup_peak(cgroup) or 0) / 2**20, wall))
            if label == "after":
                met = code == 0 and size >= GOALS["limit"] * limit
    finally:
        try:
            os.rmdir(cgroup)
        except OSError:
            pass
    return table(("tree", "limit MB", "cache MB", "cache / limit", "exit", "result", "worker peak RSS MB",
                  "cgroup peak MB", "wall s"), rows, title=f"4. Training a dataset {GOALS['limit']:.0f}x larger than the "
                 "memory limit (memory cgroup: page cache counted; 500 distinct 128x128x3 BMPs, rows cycle)"), met


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=50_000, help="CIFAR-sized images to generate (default 50,000)")
    parser.add_argument("--quick", action="store_true", help="5,000 samples and a smaller larger-than-memory case")
    parser.add_argument("--before", default="", help="a checkout of the float32 path, for the memory comparison")
    parser.add_argument("--only", default="build,memory,wait,limit", help="which parts to run (comma-separated)")
    parser.add_argument("--limit-mb", type=int, default=0, help="memory limit of the last part (default 512, quick 320)")
    args = parser.parse_args()
    samples = 5000 if args.quick and args.samples == 50_000 else args.samples
    parts = set(args.only.split(","))
    pin_threads()
    print(f"# data_scale: {machine()}; load {os.getloadavg()[0]:.1f}")
    scratch = tempfile.mkdtemp(prefix="nnconsole-bench-data-")
    trees = [("after", bench_env())] + ([("before", before_env(args.before))] if args.before else [])
    missed = []
    try:
        folder = os.path.join(scratch, "cifar")
        if parts & {"build", "memory", "wait"}:
            t = time.perf_counter()
            train_csv, _ = make_dataset(folder, samples)
            mb = sum(os.path.getsize(os.path.join(folder, "images", f))
                     for f in os.listdir(os.path.join(folder, "images")))
            print(f"generated {samples:,} 32x32x3 PNGs ({mb / 1e6:.0f} MB) in {time.perf_counter() - t:.1f} s")
        if "build" in parts:
            text, met = bench_build(train_csv, scratch, samples)
            print(text, flush=True)
            missed += [] if met else ["build"]
        if "memory" in parts:
            text, ratios = bench_memory(folder, scratch, trees)
            print(text, flush=True)
            missed += ["rss"] if ratios and max(ratios) > GOALS["rss"] else []
        if "wait" in parts:
            text, met = bench_wait(folder, scratch, min(samples, 5000))
            print(text, flush=True)
            missed += [] if met else ["wait"]
        if "limit" in parts:
            text, met = bench_limit(scratch, trees, (args.limit_mb or (320 if args.quick else 512)) * 2**20)
            print(text, flush=True)
            missed += [] if met else ["limit"]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"\ngoals missed: {', '.join(missed) if missed else 'none'}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(run_main(main))
