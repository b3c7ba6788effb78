"""A small image-classification project whose CSV rows cycle over a few distinct PNGs (the shape of issue 31's
ImageNet-row-sized dataset, cut down): the data index and decode-cache tests train it and compare parameters."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from nnconsole.engine.project.io import save_project
from nnconsole.engine.project.model import Datasets, Initializer, Layer, Network, Optimizer, Project, TrainingConfig
from tests.support.datasets import write_png


def cycled_rows(rows: int, files: int, classes: int = 3) -> list:
    """(cell, label) of ``rows`` rows cycling over ``files`` PNG names (file i has label i % classes)."""
    return [(f"img/{i % files}.png", (i % files) % classes) for i in range(rows)]


def write_cycled_csv(folder: Path, name: str, rows: int, files: int, seed: int = 0, size: int = 8) -> Path:
    """``folder/name`` naming ``rows`` rows over ``files`` random grey PNGs of ``size`` x ``size`` in ``folder/img``."""
    rng = np.random.default_rng(seed)
    for i in range(files):
        path = folder / "img" / f"{i}.png"
        if not path.exists():
            write_png(path, rng.integers(0, 256, (size, size), dtype=np.uint8))
    lines = ["x:image,y:label"] + [f"{cell},{label}" for cell, label in cycled_rows(rows, files)]
    csv_path = folder / name
    csv_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return csv_path


def cycled_image_project(folder: str, rows: int = 48, files: int = 7, epochs: int = 2, batch: int = 8,
                         workers: int = 1) -> str:
    """An Affine classifier of 8x8 grey images on ``rows`` shuffled rows over ``files`` PNGs; the project path."""
    base = Path(folder)
    base.mkdir(parents=True, exist_ok=True)
    write_cycled_csv(base, "train.csv", rows, files)
    write_cycled_csv(base, "valid.csv", max(rows // 3, 4), files)
    glorot = {"W": Initializer("NormalAffineGlorot"), "b": Initializer("Constant", value=0.0)}
    layers = [
        Layer("x", "Input", params={"shape": [1, 8, 8]}),
        Layer("fc1", "Affine", ["x"], {"out_shape": 3}, initializers=dict(glorot)),
        Layer("y", "Input", params={"shape": [1]}),
        Layer("loss", "SoftmaxCrossEntropy", ["fc1", "y"]),
    ]
    project = Project(name="cycled", network=Network(layers),
                      datasets=Datasets(training="train.csv", validation="valid.csv", shuffle=True),
                      config=TrainingConfig(max_epoch=epochs, batch_size=batch, log_interval=2, seed=5, device="cpu"),
                      optimizer=Optimizer(solver="Sgd", learning_rate=0.1))
    project.multi_gpu.workers = workers
    path = os.path.join(folder, "project.yaml")
    save_project(project, path, backup=False)
    return path
