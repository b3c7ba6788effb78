"""Generate the shapes_resnet template's data: 16x16 RGB images of coloured shapes and textures, 10 classes.

A CIFAR-like colour image set small enough to commit (about 1,300 PNGs, well under 2 MB) and generated
deterministically from a seed, so the repository needs no downloaded data and no licence beyond its own.
Each image is one class's figure (disc, square, triangle, cross, ring, bar pattern, checkerboard, dots)
in a random colour on a random, different background colour, at a random position and size, with
Gaussian pixel noise: the network has to learn shape, not colour.

Run from the repository root (only numpy and Pillow are needed, both nnconsole dependencies):
    .venv/bin/python scripts/make_shapes_dataset.py [--out project_templates/shapes_resnet/data]
The output folder's images/ and CSVs are replaced; the same seed always gives byte-identical files.
"""
from __future__ import annotations

import argparse
import csv
import shutil
from pathlib import Path
from typing import Callable, Dict, List

import numpy as np
from PIL import Image

SIZE = 16
SEED = 20261125
TRAIN_PER_CLASS = 100
VALIDATION_PER_CLASS = 30
DEFAULT_OUT = Path(__file__).resolve().parent.parent / "project_templates" / "shapes_resnet" / "data"

Mask = np.ndarray  # bool [SIZE, SIZE]


def _grid() -> tuple:
    yy, xx = np.mgrid[0:SIZE, 0:SIZE].astype(np.float64) + 0.5
    return yy, xx


def _disc(rng: np.random.Generator, cy: float, cx: float, r: float) -> Mask:
    yy, xx = _grid()
    return (yy - cy) ** 2 + (xx - cx) ** 2 <= r * r


def _ring(rng: np.random.Generator, cy: float, cx: float, r: float) -> Mask:
    yy, xx = _grid()
    d = np.sqrt((yy - cy) ** 2 + (xx - cx) ** 2)
    return (d <= r) & (d >= r - max(1.5, r * 0.4))


def _square(rng: np.random.Generator, cy: float, cx: float, r: float) -> Mask:
    yy, xx = _grid()
    return (np.abs(yy - cy) <= r * 0.85) & (np.abs(xx - cx) <= r * 0.85)


def _triangle(rng: np.random.Generator, cy: float, cx: float, r: float) -> Mask:
    yy, xx = _grid()
    top, bottom = cy - r, cy + r * 0.8
    half_width = (yy - top) / max(bottom - top, 1e-6) * r
    return (yy >= top) & (yy <= bottom) & (np.abs(xx - cx) <= half_width)


def _cross(rng: np.random.Generator, cy: float, cx: float, r: float) -> Mask:
    yy, xx = _grid()
    arm = max(1.0, r * 0.3)
    inside = (np.abs(yy - cy) <= r) & (np.abs(xx - cx) <= r)
    return inside & ((np.abs(yy - cy) <= arm) | (np.abs(xx - cx) <= arm))


def _stripes(axis: str) -> Callable[..., Mask]:
    def draw(rng: np.random.Generator, cy: float, cx: float, r: float) -> Mask:
        yy, xx = _grid()
        period = int(rng.integers(3, 6))
        phase = int(rng.integers(0, period))
        coord = {"h": yy, "v": xx, "d": yy + xx}[axis]
        return ((np.floor(coord) + phase) % period) < period / 2
    return draw


def _checker(rng: np.random.Generator, cy: float, cx: float, r: float) -> Mask:
    yy, xx = _grid()
    cell = int(rng.integers(2, 5))
    return ((np.floor(yy / cell) + np.floor(xx / cell)) % 2) == 0


def _dots(rng: np.random.Generator, cy: float, cx: float, r: float) -> Mask:
    mask = np.zeros((SIZE, SIZE), dtype=bool)
    for _ in range(int(rng.integers(3, 6))):
        mask |= _disc(rng, rng.uniform(2, SIZE - 2), rng.uniform(2, SIZE - 2), rng.uniform(1.0, 1.8))
    return mask


CLASSES: Dict[str, Callable[..., Mask]] = {
    "disc": _disc, "square": _square, "triangle": _triangle, "cross": _cross, "ring": _ring,
    "h_stripes": _stripes("h"), "v_stripes": _stripes("v"), "d_stripes": _stripes("d"),
    "checker": _checker, "dots": _dots,
}


def _colour_pair(rng: np.random.Generator) -> tuple:
    """A foreground and a background colour that differ clearly (so the figure is visible)."""
    while True:
        fg, bg = rng.uniform(0, 255, 3), rng.uniform(0, 255, 3)
        if np.abs(fg - bg).sum() > 200:
            return fg, bg


def make_image(rng: np.random.Generator, label: int) -> np.ndarray:
    """One HxWx3 uint8 image of class ``label``."""
    draw = list(CLASSES.values())[label]
    r = rng.uniform(4.0, 7.0)
    cy, cx = rng.uniform(r * 0.8, SIZE - r * 0.8), rng.uniform(r * 0.8, SIZE - r * 0.8)
    mask = draw(rng, cy, cx, r)
    fg, bg = _colour_pair(rng)
    image = np.where(mask[..., None], fg, bg) + rng.normal(0, 12, (SIZE, SIZE, 3))
    return np.clip(np.round(image), 0, 255).astype(np.uint8)


def write_split(out: Path, name: str, rows: List[tuple]) -> None:
    with open(out / f"{name}.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(["x:image", "y:label"])
        writer.writerows(rows)


def generate(out: Path, seed: int = SEED) -> Dict[str, int]:
    """Write out/images/*.png, out/train.csv and out/validation.csv; returns the row count per split."""
    rng = np.random.default_rng(seed)
    images = out / "images"
    if images.exists():
        shutil.rmtree(images)
    images.mkdir(parents=True)
    splits: Dict[str, List[tuple]] = {"train": [], "validation": []}
    index = 0
    for split, per_class in (("train", TRAIN_PER_CLASS), ("validation", VALIDATION_PER_CLASS)):
        labels = np.repeat(np.arange(len(CLASSES)), per_class)
        rng.shuffle(labels)
        for label in labels:
            rel = f"images/{index:05d}.png"
            Image.fromarray(make_image(rng, int(label)), "RGB").save(out / rel, optimize=True)
            splits[split].append((rel, int(label)))
            index += 1
    for split, rows in splits.items():
        write_split(out, split, rows)
    return {split: len(rows) for split, rows in splits.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="data folder to (re)write")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    counts = generate(args.out, args.seed)
    print(f"wrote {counts} to {args.out}; classes: {', '.join(CLASSES)}")


if __name__ == "__main__":
    main()
