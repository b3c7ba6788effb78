"""Copy the digits_cnn template's data into the binary_digits template (dev-time; the copy is committed).

A template folder must be self-contained when the GUI or ``nnconsole new`` copies it, so the binary
network's template carries its own copy of the 1,797 8x8 digit PNGs (about 320 KB) and the same
train/validation split as digits_cnn; its provenance and licence (UCI optdigits, CC BY 4.0) are digits_cnn's.

Run from the repository root:  .venv/bin/python scripts/make_binary_digits_dataset.py
"""
from __future__ import annotations

import shutil
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parent.parent / "project_templates"
SOURCE = TEMPLATES / "digits_cnn" / "data"
TARGET = TEMPLATES / "binary_digits" / "data"


def copy_digits(source: Path = SOURCE, target: Path = TARGET) -> int:
    """Replace target's images/ and CSVs with source's; returns the number of images copied."""
    if (target / "images").exists():
        shutil.rmtree(target / "images")
    target.mkdir(parents=True, exist_ok=True)
    shutil.copytree(source / "images", target / "images")
    for name in ("train.csv", "validation.csv"):
        shutil.copyfile(source / name, target / name)
    return sum(1 for _ in (target / "images").glob("*.png"))


if __name__ == "__main__":
    print(f"copied {copy_digits()} images to {TARGET}")
