"""A tiny trained-looking run to infer with, for the issue-25 tests of ``nnconsole infer`` (outputs, names, sizes).

Kept beside those tests (not in tests/helpers.py) so they do not depend on another test module's builders.
"""
from __future__ import annotations

from pathlib import Path
from typing import List, Tuple

import numpy as np
from PIL import Image

from nnconsole.engine.project.io import save_project
from nnconsole.engine.project.model import Datasets, Layer, Network, Project, TrainingConfig
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.protocol import RESOLVED_FILE

SHAPE = (1, 4, 5)  # grey, 4 high, 5 wide


def make_run(root: Path, shape: Tuple[int, ...] = SHAPE) -> str:
    """A finished run folder: x -> Affine(3) -> SoftmaxCrossEntropy with random weights; returns its path."""
    import nnabla as nn  # deferred: only these tests build parameters

    from nnconsole.engine.runtime.graph import build_graph

    data = root / "data"
    data.mkdir(parents=True, exist_ok=True)
    (data / "train.csv").write_text("x:image,y:label\nimg.png,0\n")
    layers = [Layer("x", "Input", params={"shape": list(shape), "variable": "x"}),
              Layer("fc", "Affine", ["x"], {"out_shape": 3}),
              Layer("y", "Input", params={"shape": [1], "variable": "y"}),
              Layer("loss", "SoftmaxCrossEntropy", ["fc", "y"])]
    project = Project(name="tiny", network=Network(layers), config=TrainingConfig(batch_size=4),
                      datasets=Datasets(training=str(data / "train.csv"), validation=str(data / "train.csv"),
                                        cache=False))
    run_dir = root / "results" / "tiny" / "20260101_000000"
    run_dir.mkdir(parents=True)
    save_project(project, str(run_dir / RESOLVED_FILE), backup=False)
    save_project(project, str(root / "tiny.yaml"), backup=False)
    runs.write_status(str(run_dir), runs.StatusRecord(status="finished"))
    rng = np.random.default_rng(7)
    nn.clear_parameters()
    build_graph(project.network, 2, "runtime")
    params = nn.get_parameters()
    params["fc/affine/W"].d = rng.normal(0, 0.5, params["fc/affine/W"].shape).astype(np.float32)
    params["fc/affine/b"].d = rng.normal(0, 0.1, 3).astype(np.float32)
    nn.save_parameters(str(run_dir / "parameters_final.h5"))
    nn.save_parameters(str(run_dir / "parameters_best.h5"))
    nn.clear_parameters()
    return str(run_dir)


def write_images(folder: Path, names: List[str], size: Tuple[int, int] = SHAPE[1:]) -> List[str]:
    """Random grey images of (H, W) ``size`` named ``names`` (str or bytes) in ``folder``; returns their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    paths = []
    for name in names:
        path = folder / (name if isinstance(name, str) else name.decode("utf-8", "surrogateescape"))
        Image.fromarray(rng.integers(0, 256, size, dtype=np.uint8), "L").save(path, format="PNG")
        paths.append(str(path))
    return paths
