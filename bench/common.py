"""Shared pieces of the benchmarks: machine description, medians, tables, and the bench projects.

Benchmarks are run on demand (``.venv/bin/python bench/<name>.py [--quick]``), never by the test
suite. Every figure that is compared is measured in the same run, repeated, and reduced to a median,
because the reference machine (2 cores, shared) is noisy.
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import traceback
from typing import Any, Callable, Iterable, List, Optional, Sequence
from nnconsole.engine.check.project_file import load_valid_project

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Which installation to measure: this venv's, or (for before/after figures) another checkout's, e.g.
# NNCONSOLE_BENCH_PYTHON=/tmp/before/.venv/bin/python after `git worktree add /tmp/before HEAD~3` and
# `scripts/bootstrap.sh` there. The measured processes (CLI, launcher, workers) run under that interpreter,
# which imports its own installed nnconsole; in-process figures (bench/gui.py) always measure this one.
PYTHON = os.path.abspath(os.environ.get("NNCONSOLE_BENCH_PYTHON", sys.executable))

TEMPLATES = os.path.join(ROOT, "project_templates")
DIGITS = os.path.join(TEMPLATES, "digits_cnn")

# One compute thread per process everywhere: nnabla's CPU backend is single-threaded, but numpy's
# OpenBLAS is not, and with 2 cores and 2 workers any extra thread only oversubscribes.
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def pin_threads(n: int = 1) -> None:
    """Set the thread variables (before numpy is imported) unless the caller already chose."""
    for var in THREAD_VARS:
        os.environ.setdefault(var, str(n))
    os.environ.setdefault("NNABLA_LOG_LEVEL", "WARNING")


def bench_env(threads: int = 1) -> dict:
    """Environment for child processes: threads pinned, quiet nnabla."""
    env = dict(os.environ)
    for var in THREAD_VARS:
        env[var] = env.get(var, str(threads))
    env["NNABLA_LOG_LEVEL"] = "WARNING"
    return env


def machine() -> str:
    """One line: date, nproc, CPU model, Python, nnabla."""
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        import importlib.metadata as md
        nnabla = md.version("nnabla")
    except Exception:
        nnabla = "?"
    threads = os.environ.get("OMP_NUM_THREADS", "unset")
    tree = "" if PYTHON == os.path.abspath(sys.executable) else f", measured processes run {PYTHON}"
    return (f"{datetime.date.today().isoformat()}, nproc {os.cpu_count()}, {cpu}, Python "
            f"{platform.python_version()}, nnabla {nnabla}, OMP_NUM_THREADS={threads}{tree}")


def median(values: Iterable[float]) -> float:
    values = list(values)
    return statistics.median(values) if values else float("nan")


def spread(values: Sequence[float]) -> str:
    """min-max of a sample, for the tables (how noisy the machine was)."""
    if not values:
        return "-"
    return f"{min(values):.3g}-{max(values):.3g}"


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], title: Optional[str] = None) -> str:
    """A plain-text table (right-aligned numbers), also valid Markdown."""
    cells = [[str(h) for h in headers]] + [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = []
    if title:
        lines.append(f"\n{title}")
    lines.append("| " + " | ".join(c.ljust(w) for c, w in zip(cells[0], widths)) + " |")
    lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in cells[1:]:
        lines.append("| " + " | ".join(c.rjust(w) if _numeric(c) else c.ljust(w) for c, w in zip(row, widths)) + " |")
    return "\n".join(lines)


def _fmt(value: object) -> str:
    if isinstance(value, float):
        if value != value:
            return "n/a"
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        if abs(value) >= 10:
            return f"{value:.1f}"
        return f"{value:.3g}" if abs(value) >= 0.01 else f"{value:.2g}"
    return str(value)


def _numeric(text: str) -> bool:
    return bool(text) and (text[0].isdigit() or text[0] in "-+.") and not text.startswith("--")


def scratch(prefix: str) -> str:
    """A fresh temporary folder for one benchmark's projects and runs."""
    return tempfile.mkdtemp(prefix=f"nnconsole-bench-{prefix}-")


# ---- bench projects ---------------------------------------------------------------------------------
def _glorot(conv: bool = False) -> dict:
    from nnconsole.engine.project.model import Initializer

    return {"W": Initializer("NormalConvolutionGlorot" if conv else "NormalAffineGlorot"),
            "b": Initializer("Constant", value=0.0)}


def digits_project(folder: str, model: str = "digits_cnn", epochs: int = 10, batch: int = 32,
                   monitor: int = 10) -> str:
    """A project on the digits template's data; returns the path of its YAML in ``folder``.

    ``model``: ``digits_cnn`` (the template network), ``wide_mlp`` (64-1024-1024-10, 1.1 M
    parameters) or ``wide_cnn`` (conv 64 + conv 128 + affine 10, compute-bound: ~1.3 M
    multiply-adds per sample for 80 k parameters).
    """
    from nnconsole.engine.project.io import save_project
    from nnconsole.engine.project.model import Layer, Network

    project = load_valid_project(os.path.join(DIGITS, "project.yaml"))
    if model == "wide_mlp":
        project.network = Network([
            Layer("x", "Input", params={"shape": [1, 8, 8], "variable": "x"}),
            Layer("fc1", "Affine", ["x"], {"out_shape": 1024}, initializers=_glorot()),
            Layer("relu1", "ReLU", ["fc1"]),
            Layer("fc2", "Affine", ["relu1"], {"out_shape": 1024}, initializers=_glorot()),
            Layer("relu2", "ReLU", ["fc2"]),
            Layer("fc3", "Affine", ["relu2"], {"out_shape": 10}, initializers=_glorot()),
            Layer("y", "Input", params={"shape": [1], "variable": "y"}),
            Layer("loss", "SoftmaxCrossEntropy", ["fc3", "y"]),
        ])
    elif model == "wide_cnn":
        project.network = Network([
            Layer("x", "Input", params={"shape": [1, 8, 8], "variable": "x"}),
            Layer("conv1", "Convolution", ["x"], {"outmaps": 64, "kernel": [3, 3], "pad": [1, 1]},
                  initializers=_glorot(True)),
            Layer("relu1", "ReLU", ["conv1"]),
            Layer("pool1", "MaxPooling", ["relu1"], {"kernel": [2, 2], "stride": [2, 2]}),
            Layer("conv2", "Convolution", ["pool1"], {"outmaps": 128, "kernel": [3, 3], "pad": [1, 1]},
                  initializers=_glorot(True)),
            Layer("relu2", "ReLU", ["conv2"]),
            Layer("pool2", "MaxPooling", ["relu2"], {"kernel": [2, 2], "stride": [2, 2]}),
            Layer("fc1", "Affine", ["pool2"], {"out_shape": 10}, initializers=_glorot()),
            Layer("y", "Input", params={"shape": [1], "variable": "y"}),
            Layer("loss", "SoftmaxCrossEntropy", ["fc1", "y"]),
        ])
    elif model != "digits_cnn":
        raise ValueError(f"unknown bench model {model!r}")
    project.name = model
    # A project may only read data inside its own folder: give the bench folder a copy of the data
    # (1,797 small PNGs and the CSVs; the decode cache comes along with its timestamps).
    data = os.path.join(folder, "data")
    if not os.path.isdir(data):
        shutil.copytree(os.path.join(DIGITS, "data"), data)
    project.datasets.training = "data/train.csv"
    project.datasets.validation = "data/validation.csv"
    project.config.max_epoch = epochs
    project.config.batch_size = batch
    project.config.log_interval = monitor
    project.config.device = "cpu"
    project.multi_gpu.workers = 1  # the benches choose the worker count on the command line
    project.multi_gpu.bucket_mb = 0.0  # the engine's default bucket size
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{model}.yaml")
    save_project(project, path, backup=False)
    return path


def parse_quick(doc: str = "") -> "object":
    import argparse

    parser = argparse.ArgumentParser(description=doc)
    parser.add_argument("--quick", action="store_true", help="fewer repeats and smaller sizes (a smoke run)")
    return parser


# ---- exit status ------------------------------------------------------------------------------------
def run_main(main: Callable[[], int]) -> int:
    """A script's exit status: ``main()``'s (0 = goal met, 1 = goal missed), or 2 when a run failed
    (an exception: its traceback is printed)."""
    try:
        return main()
    except Exception:  # noqa: BLE001 - any failure is "a run failed", not "a goal missed"
        traceback.print_exc()
        print("a run failed (exit status 2)", file=sys.stderr)
        return 2


# ---- ranks under mpiexec ----------------------------------------------------------------------------
RESULT = "RESULT "


def mpi_prefix(workers: int, plain: bool = False) -> List[str]:
    """The command that starts ``workers`` ranks on this host, up to the rank's own command line.

    By default exactly the launcher's flags for a one-host CPU run (``nnconsole.engine.launch.launcher.worker_command``:
    btl self,sm; smsc ^cma; --bind-to none), i.e. what ``nnconsole train --gpus N`` runs; ``plain``: a
    bare ``mpiexec -n N --bind-to none``.
    """
    from nnconsole.engine.launch.launcher import find_mpiexec, worker_command

    if plain:
        cmd = [find_mpiexec(), "-n", str(workers), "--bind-to", "none"]
        if workers > (os.cpu_count() or 1):
            cmd.append("--oversubscribe")
        return cmd
    from nnconsole.engine.helper_processes import python_module_command

    tail = len(python_module_command("nnconsole.engine.train.worker")) + 1  # the worker's Python command and run dir
    return worker_command("RUN", workers, oversubscribe=True)[:-tail]  # --workers N on the command line is consent


def mpi_env() -> dict:
    """Environment for mpiexec: the launcher's (root allowed, unbuffered output) plus :func:`bench_env`."""
    from nnconsole.engine.launch.launcher import mpi_environment

    return dict(mpi_environment(), **{k: v for k, v in bench_env().items() if k != "PYTHONUNBUFFERED"})


def print_result(result: dict) -> None:
    """What rank 0 of a measurement prints for the parent: one ``RESULT {json}`` line."""
    print(RESULT + json.dumps(result), flush=True)


def parse_result(stdout: str) -> Optional[dict]:
    """The last ``RESULT {json}`` line of a measurement's output, or None."""
    lines = [line for line in stdout.splitlines() if line.startswith(RESULT)]
    return json.loads(lines[-1][len(RESULT):]) if lines else None


def test_support(name: str) -> Any:
    """A module of the checkout's tests/support package (``projects``, ``cli``, ``netns_hosts``), loaded by its
    file path as a submodule of a package of its own, so its relative imports (``from .paths import ROOT``) work.

    Benchmarks share the tests' project builders and host harness without putting the checkout on
    ``sys.path`` (tests/repo/test_boundaries.py: the package is used as installed).
    """
    import importlib
    import importlib.util

    package = "nnconsole_bench_support"
    if package not in sys.modules:
        folder = os.path.join(ROOT, "tests", "support")
        spec = importlib.util.spec_from_file_location(package, os.path.join(folder, "__init__.py"),
                                                      submodule_search_locations=[folder])
        module = importlib.util.module_from_spec(spec)
        sys.modules[package] = module  # dataclasses look their module up while the class is made
        spec.loader.exec_module(module)
    return importlib.import_module(f"{package}.{name}")

