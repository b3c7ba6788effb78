"""Generated data and projects for bench/data_scale.py (issue 18): CIFAR-sized PNGs, big BMP datasets whose rows
cycle over a few files, and the bench networks; never committed, always generated into a temp folder."""
from __future__ import annotations

import json
import os
import subprocess
from concurrent.futures import ProcessPoolExecutor
from typing import Tuple

from common import PYTHON, ROOT
from nnconsole.engine.check.project_file import load_valid_project


# ---- generated data -----------------------------------------------------------------------------------
def _write_images(args: Tuple[str, int, int, int, int, str, int]) -> None:
    import numpy as np
    from PIL import Image

    folder, start, stop, size, channels, fmt, seed = args
    rng = np.random.default_rng(seed + start)
    yy, xx = np.mgrid[0:size, 0:size]
    # a class-dependent pattern plus noise: learnable, and compresses about as CIFAR's PNGs do
    bases = [np.sin(xx * (k + 1) / size * 3.1) * np.cos(yy * (10 - k) / size * 2.3) * 80 + 100 for k in range(10)]
    bases = [np.repeat(b[..., None], channels, axis=-1).astype(np.uint8) for b in bases]
    for i in range(start, stop):
        img = bases[i % 10] + rng.integers(0, 56, bases[0].shape, dtype=np.uint8)
        Image.fromarray(img if channels == 3 else img[..., 0]).save(os.path.join(folder, "images", f"{i:06d}.{fmt}"))


def make_dataset(folder: str, samples: int, size: int = 32, channels: int = 3, fmt: str = "png",
                 validation: int = 1000, seed: int = 0, workers: int = 0, distinct: int = 0) -> Tuple[str, str]:
    """``samples`` generated images with labels 0-9, train.csv (all) and validation.csv (the first
    ``validation``); returns the two CSV paths. Generation uses every core. With ``distinct`` the rows cycle
    over that many image files (for caches larger than memory: the cache holds every row)."""
    os.makedirs(os.path.join(folder, "images"), exist_ok=True)
    files = min(distinct or samples, samples)
    step = 500
    tasks = [(folder, s, min(s + step, files), size, channels, fmt, seed) for s in range(0, files, step)]
    with ProcessPoolExecutor(workers or os.cpu_count()) as pool:
        list(pool.map(_write_images, tasks))
    rows = ["x:image,y:label"] + [f"images/{i % files:06d}.{fmt},{i % files % 10}" for i in range(samples)]
    train, valid = os.path.join(folder, "train.csv"), os.path.join(folder, "validation.csv")
    with open(train, "w") as fh:
        fh.write("\n".join(rows) + "\n")
    with open(valid, "w") as fh:
        fh.write("\n".join(rows[:1 + min(validation, samples)]) + "\n")
    return train, valid


def make_project(folder: str, shape: Tuple[int, int, int], model: str, epochs: int = 1, batch: int = 64,
                 workers: int = 1, training: str = "train.csv", suffix: str = "") -> str:
    """A project on ``folder``'s train.csv/validation.csv; ``model``: ``cifar_cnn`` (conv 32-64, affine 128-10),
    ``digits_cnn`` (the template's layers) or ``pool_linear`` (average pool to 8x8, affine 10: data-bound)."""
    from nnconsole.engine.project.io import save_project
    from nnconsole.engine.project.model import Initializer, Layer, Network

    def glorot(conv: bool = False) -> dict:
        return {"W": Initializer("NormalConvolutionGlorot" if conv else "NormalAffineGlorot"),
                "b": Initializer("Constant", value=0.0)}

    project = load_valid_project(os.path.join(ROOT, "project_templates", "digits_cnn", "project.yaml"))
    x = Layer("x", "Input", params={"shape": list(shape), "variable": "x"})
    tail = [Layer("y", "Input", params={"shape": [1], "variable": "y"})]
    if model == "cifar_cnn":
        layers = [x, Layer("conv1", "Convolution", ["x"], {"outmaps": 32, "kernel": [3, 3], "pad": [1, 1]},
                           initializers=glorot(True)),
                  Layer("relu1", "ReLU", ["conv1"]),
                  Layer("pool1", "MaxPooling", ["relu1"], {"kernel": [2, 2], "stride": [2, 2]}),
                  Layer("conv2", "Convolution", ["pool1"], {"outmaps": 64, "kernel": [3, 3], "pad": [1, 1]},
                        initializers=glorot(True)),
                  Layer("relu2", "ReLU", ["conv2"]),
                  Layer("pool2", "MaxPooling", ["relu2"], {"kernel": [2, 2], "stride": [2, 2]}),
                  Layer("fc1", "Affine", ["pool2"], {"out_shape": 128}, initializers=glorot()),
                  Layer("relu3", "ReLU", ["fc1"]),
                  Layer("fc2", "Affine", ["relu3"], {"out_shape": 10}, initializers=glorot())]
    elif model == "pool_linear":
        k = max(shape[1] // 8, 1)
        layers = [x, Layer("pool", "AveragePooling", ["x"], {"kernel": [k, k], "stride": [k, k]}),
                  Layer("fc2", "Affine", ["pool"], {"out_shape": 10}, initializers=glorot())]
    elif model == "digits_cnn":
        project.network.layers[0].params["shape"] = list(shape)
        layers = [layer for layer in project.network.layers if layer.name not in ("y", "loss")]
    else:
        raise ValueError(model)
    project.network = Network(layers + tail + [Layer("loss", "SoftmaxCrossEntropy", ["fc2", "y"])])
    project.name = model
    project.datasets.training = training
    project.datasets.validation = "validation.csv"
    project.config.max_epoch = epochs
    project.config.batch_size = batch
    project.config.log_interval = 20
    project.config.device = "cpu"
    project.config.save_best = False
    project.multi_gpu.workers = workers
    path = os.path.join(folder, f"{model}{suffix}.yaml")
    save_project(project, path, backup=False)
    return path


def project_for(env: dict, *args: object, **kwargs: object) -> str:
    """``make_project`` run by the nnconsole ``env`` imports (an older tree writes a project it can read)."""
    out = subprocess.run([PYTHON, os.path.abspath(__file__), json.dumps([args, kwargs])], capture_output=True,
                         text=True, env=env, timeout=300)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    return out.stdout.strip().splitlines()[-1]


if __name__ == "__main__":  # project_for's child: make_project(*args, **kwargs) from a JSON argument
    import sys

    positional, named = json.loads(sys.argv[1])
    print(make_project(*positional, **named))
