"""Write the vat_digits template's data from the digits_cnn template's (UCI optdigits, 8x8 grey images):
semi-supervised digits for virtual adversarial training (NNC's VAT sample, issue 26).

- ``data/images/``: a copy of digits_cnn's images (a template is copied alone, so it carries its own);
- ``data/train.csv``: one row per digits_cnn training image: ``xu`` that image, unlabelled (the VAT loss
  reads it), and ``x``/``y`` one of the LABELLED subset, 10 images per class picked with a fixed seed, the
  100 repeated in turn down the rows (each labelled image labels about 14 rows);
- ``data/validation.csv``: digits_cnn's validation images with their labels (``x``, ``y``; every dataset holds
  the variables of every trained network, so ``xu`` repeats ``x``: validation runs the Main network only).

The labelled-only baseline is the same project without the VAT optimizers: it sees the same labelled rows.
numpy only, seeded: the same files every time.

Usage: python project_templates/tools/make_vat_digits.py
"""
from __future__ import annotations

import csv
import shutil
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "digits_cnn" / "data"
TARGET = ROOT / "vat_digits" / "data"
PER_CLASS = 10  # labelled images per class
SEED = 0


def _rows(path: Path) -> list:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))[1:]


def _write(path: Path, header: list, rows: list) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


def labelled_subset(labels: np.ndarray) -> np.ndarray:
    """Row indices of the labelled images: PER_CLASS per class, ordered class 0..9, 0..9, ... so that any
    run of 10 consecutive rows holds every class once."""
    rng = np.random.RandomState(SEED)
    classes = sorted(set(labels.tolist()))
    picks = [rng.permutation(np.flatnonzero(labels == c))[:PER_CLASS] for c in classes]
    return np.stack(picks, axis=1).reshape(-1)


def main() -> None:
    train, valid = _rows(SOURCE / "train.csv"), _rows(SOURCE / "validation.csv")
    if TARGET.exists():
        shutil.rmtree(TARGET)
    shutil.copytree(SOURCE / "images", TARGET / "images")
    labels = np.array([int(r[1]) for r in train])
    chosen = labelled_subset(labels)
    rows = [[train[chosen[i % len(chosen)]][0], train[chosen[i % len(chosen)]][1], image]
            for i, (image, _) in enumerate(train)]
    _write(TARGET / "train.csv", ["x:image", "y:label", "xu:image"], rows)
    _write(TARGET / "validation.csv", ["x:image", "y:label", "xu:image"], [[x, y, x] for x, y in valid])
    print(f"vat_digits: {len(chosen)} labelled of {len(train)} training images, {len(valid)} validation")


if __name__ == "__main__":
    main()
