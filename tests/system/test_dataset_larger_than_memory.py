"""A dataset larger than the memory limit trains to the end (issue 18), scaled down: the worker's private
memory is limited (RLIMIT_DATA, as ``prlimit --data`` sets it) to half the size of the dataset's cache.

Private memory is what the float32 path filled with the whole dataset, and what no other process can
reclaim; the uint8 cache is a read-only file mapping the kernel pages in and out as needed (the page
cache). bench/data_scale.py runs the same case in a memory cgroup, where the page cache counts too.
"""
from __future__ import annotations

import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from nnconsole.engine.check.project_file import load_valid_project
from tests.support.paths import ROOT, TEMPLATES

LIMIT = 256 * 2**20  # bytes of private memory; a training worker needs about 130 MB of its own
SIDE = 256

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not hasattr(resource, "RLIMIT_DATA"), reason="needs RLIMIT_DATA (Linux)")]


def big_dataset(folder: Path, cache_bytes: int) -> Path:
    """A CSV of 3x256x256 images whose uint8 cache is ``cache_bytes``. The cache holds each distinct file once
    (issue 31), so every row names its own file; the files are copies of 10 smooth class images (PNG
    compresses them to a few kB), so only the cache, not the image files, takes the disk space."""
    (folder / "images").mkdir(parents=True)
    ramp = np.linspace(0, 40, SIDE, dtype=np.float32)
    classes = []
    for k in range(10):
        pixels = (20 * k + ramp[:, None, None] + ramp[None, :, None] * np.array([0.0, 0.5, 1.0])).astype(np.uint8)
        Image.fromarray(pixels).save(folder / f"class{k}.png")
        classes.append((folder / f"class{k}.png").read_bytes())
    rows = cache_bytes // (3 * SIDE * SIDE) + 1
    for i in range(rows):
        (folder / "images" / f"{i}.png").write_bytes(classes[i % 10])
    lines = ["x:image,y:label"] + [f"images/{i}.png,{i % 10}" for i in range(rows)]
    (folder / "train.csv").write_text("\n".join(lines) + "\n")
    (folder / "validation.csv").write_text("\n".join(lines[:41]) + "\n")
    return folder / "train.csv"


def project_file(folder: Path) -> Path:
    from nnconsole.engine.project.io import save_project
    from nnconsole.engine.project.model import Initializer, Layer, Network

    project = load_valid_project(os.path.join(TEMPLATES, "digits_cnn", "project.yaml"))
    project.network = Network([
        Layer("x", "Input", params={"shape": [3, SIDE, SIDE], "variable": "x"}),
        Layer("pool", "AveragePooling", ["x"], {"kernel": [32, 32], "stride": [32, 32]}),
        Layer("fc", "Affine", ["pool"], {"out_shape": 10},
              initializers={"W": Initializer("NormalAffineGlorot"), "b": Initializer("Constant", value=0.0)}),
        Layer("y", "Input", params={"shape": [1], "variable": "y"}),
        Layer("loss", "SoftmaxCrossEntropy", ["fc", "y"]),
    ])
    project.datasets.training, project.datasets.validation = "train.csv", "validation.csv"
    project.config.max_epoch, project.config.batch_size, project.config.log_interval = 1, 16, 50
    project.config.device = "cpu"
    path = folder / "big.yaml"
    save_project(project, str(path), backup=False)
    return path


def limited(code: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", NNABLA_LOG_LEVEL="WARNING")
    return subprocess.run(["prlimit", f"--data={LIMIT}", sys.executable, "-c", textwrap.dedent(code)],
                          capture_output=True, text=True, cwd=str(cwd), env=env, timeout=600)


def test_a_cache_twice_the_memory_limit_trains_to_the_end(tmp_path):
    if subprocess.run(["prlimit", "--version"], capture_output=True).returncode != 0:
        pytest.skip("prlimit (util-linux) not installed")
    folder = tmp_path / "big"
    csv_path = big_dataset(folder, 2 * LIMIT + 2**20)
    project = project_file(folder)
    run = limited(f"""
        import sys
        sys.path.insert(0, {ROOT!r})
        from nnconsole.engine.check.project_file import load_valid_project
        from nnconsole.engine.rundir import store as runs
        from tests.support.training import train_in_process
        run_dir, losses = train_in_process(load_valid_project({str(project)!r}), {str(tmp_path / 'results')!r})
        last = list(runs.iter_metrics(run_dir, "train"))[-1]
        status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines())
        print("trained", last["iteration"], last["total_iterations"], status["VmData"].strip(), status["VmHWM"].strip())
    """, tmp_path)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    cache = [p for p in (folder / ".nnconsole-cache").rglob("*.npy")]
    size = sum(p.stat().st_size for p in cache)
    assert size >= 2 * LIMIT, f"the cache is {size / 2**20:.0f} MB, not twice the {LIMIT / 2**20:.0f} MB limit"
    words = run.stdout.split("trained", 1)[1].split()
    assert words[0] == words[1], f"stopped at iteration {words[0]} of {words[1]}"
    # the same limit is binding: the whole dataset as float32 (the path this replaced) does not fit
    control = limited(f"""
        import sys
        sys.path.insert(0, {ROOT!r})
        from nnconsole.engine.data.loading import load_dataset
        try:
            load_dataset({str(csv_path)!r}, {{"x": (3, {SIDE}, {SIDE}), "y": (1,)}}).arrays["x"]
        except MemoryError:
            print("MemoryError")
    """, tmp_path)
    assert "MemoryError" in control.stdout, control.stdout + control.stderr[-2000:]
