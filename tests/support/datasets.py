"""Image datasets written for the data, cache, inference and dataset-creation tests: PNGs from pixel arrays,
an image-classification CSV, random images, a class-folder source tree as ``nnconsole dataset create`` reads
it; and the helpers that check a cache without decoding."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image


def write_png(path: Path, pixels: np.ndarray) -> None:
    """``pixels`` (H, W) grey or (H, W, 3) colour as a PNG at ``path`` (folders made)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = "L" if pixels.ndim == 2 else "RGB"
    Image.fromarray(pixels.astype(np.uint8), mode=mode).save(path)


def grey(i: int, h: int = 8, w: int = 8) -> np.ndarray:
    """A distinct deterministic grey image per i."""
    return ((np.arange(h * w).reshape(h, w) * 3 + i * 17) % 256).astype(np.uint8)


def image_csv(tmp_path: Path, n: int = 4, labels=None, header: str = "x:image,y:label") -> Path:
    """``ds/train.csv`` naming ``n`` grey PNGs (``grey(i)``) in ``ds/img`` with their labels (0..n-1 by default)."""
    folder = tmp_path / "ds"
    rows = [header]
    for i in range(n):
        write_png(folder / "img" / f"{i}.png", grey(i))
        rows.append(f"img/{i}.png,{(labels or list(range(n)))[i]}")
    csv_path = folder / "train.csv"
    csv_path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return csv_path


def no_decoding(monkeypatch) -> None:
    """Make any image decoding fail the test (for the paths that must read the cache only)."""
    from nnconsole.engine.data import decode as dataset_decode

    def fail(*_args, **_kwargs):
        raise AssertionError("an image was decoded")
    monkeypatch.setattr(dataset_decode, "_decode_image", fail)
    monkeypatch.setattr(dataset_decode, "_probe_mode", fail)


def cache_entries(folder: Path) -> list:
    """The finished entries of a cache folder (one folder per dataset version; hidden ones are partial)."""
    return [p for p in folder.glob("*") if p.is_dir() and not p.name.startswith(".")] if folder.is_dir() else []


def write_images(folder, count=5, size=(4, 5), mode="RGB", seed=0):
    """``count`` random images of (H, W) ``size``; returns their paths and pixels as (C, H, W) float arrays."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    paths, pixels = [], []
    for i in range(count):
        shape = size + ((3,) if mode == "RGB" else ())
        arr = rng.integers(0, 256, shape, dtype=np.uint8)
        path = folder / f"im{i:02d}.png"
        Image.fromarray(arr, mode).save(path)
        paths.append(str(path))
        pixels.append(arr.transpose(2, 0, 1) if arr.ndim == 3 else arr[None])
    return paths, np.stack(pixels).astype(np.float64)


SIZES = [(40, 30), (30, 40), (16, 16), (17, 50), (50, 17), (33, 21)]  # (w, h): wider, taller, equal, odd


def make_source(folder: Path, classes=("cat", "dög house"), seed: int = 0) -> Path:
    """Class folders with colour PNGs and grey JPEGs of several aspect ratios, a damaged file, a text file."""
    rng = np.random.default_rng(seed)
    for c, name in enumerate(classes):
        (folder / name).mkdir(parents=True)
        for i, (w, h) in enumerate(SIZES):
            colour = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
            colour[..., c % 3] = 200  # a class-coloured channel, so a network can learn it
            Image.fromarray(colour).save(folder / name / f"c{i}.png")
            Image.fromarray(colour[..., 0]).save(folder / name / f"g {i}.jpg", quality=95)
    (folder / classes[0] / "broken.png").write_bytes(b"not a png at all")
    (folder / classes[0] / "notes.txt").write_text("not an image")
    (folder / "no images").mkdir()
    return folder
