"""Regenerate the bundled template datasets (dev-time only; the generated files are committed).

Provenance (all loaded from the copies bundled inside scikit-learn; nothing is downloaded):
- digits_cnn (and its copy in digits_search): UCI "Optical Recognition of Handwritten Digits" (optdigits) test set, 1,797 8x8 images,
  via ``sklearn.datasets.load_digits``. License CC BY 4.0 (UCI Machine Learning Repository).
- wine_mlp: UCI "Wine" (178 samples, 13 features, 3 cultivars) via ``load_wine``. CC BY 4.0.
- iris_mlp: UCI / Fisher "Iris" (150 samples, 4 features, 3 species) via ``load_iris``. CC BY 4.0.
- diabetes_regression: Efron et al. (2004) "Least Angle Regression" diabetes data (442 patients,
  10 baseline features, disease progression after one year) via ``load_diabetes(scaled=False)``.

Splits are deterministic: ``train_test_split(test_size=0.2, random_state=0)``, stratified by class for
the classification sets. Tabular features (and the diabetes target) are standardised with the
TRAINING split's mean and standard deviation (population std, ddof=0); the statistics are written to
``data/scaling.json`` so that predictions can be mapped back.

Run (scikit-learn is not a dependency of nnconsole; use a scratch venv outside the repository):
    python3 -m venv /tmp/skvenv && /tmp/skvenv/bin/pip install scikit-learn pillow
    /tmp/skvenv/bin/python project_templates/tools/make_data.py
"""
from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
from PIL import Image
from sklearn.datasets import load_diabetes, load_digits, load_iris, load_wine
from sklearn.model_selection import train_test_split

ROOT = Path(__file__).resolve().parent.parent
SEED = 0
TEST_SIZE = 0.2


def split(n: int, y: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Deterministic ~80/20 split of row indices (stratified when labels are given), each sorted."""
    train, val = train_test_split(np.arange(n), test_size=TEST_SIZE, random_state=SEED, stratify=y)
    return np.sort(train), np.sort(val)


def fmt(v: float) -> str:
    return f"{float(v):.6g}"


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


def make_digits() -> None:
    data = load_digits()
    images = data.images  # (1797, 8, 8), values 0..16
    labels = data.target.astype(int)
    out = ROOT / "digits_cnn" / "data"
    img_dir = out / "images"
    if img_dir.exists():
        shutil.rmtree(img_dir)
    img_dir.mkdir(parents=True)
    names = []
    for i, img in enumerate(images):
        pixels = np.round(img * 255.0 / 16.0).astype(np.uint8)
        name = f"images/{i:05d}.png"
        Image.fromarray(pixels, mode="L").save(out / name, optimize=True)
        back = np.asarray(Image.open(out / name))
        assert back.shape == (8, 8) and np.array_equal(back, pixels), name
        names.append(name)
    train, val = split(len(labels), labels)
    header = ["x:image", "y:label"]
    write_csv(out / "train.csv", header, [[names[i], str(labels[i])] for i in train])
    write_csv(out / "validation.csv", header, [[names[i], str(labels[i])] for i in val])
    print(f"digits: {len(train)} train / {len(val)} validation")
    search = ROOT / "digits_search" / "data"  # the search template carries its own copy (a template is copied alone)
    if search.exists():
        shutil.rmtree(search)
    shutil.copytree(out, search)


def standardise(x: np.ndarray, train: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    mean = x[train].mean(axis=0)
    std = x[train].std(axis=0)
    std[std == 0] = 1.0
    return (x - mean) / std, mean, std


def make_tabular(name: str, x: np.ndarray, y: np.ndarray, classification: bool, source: str) -> None:
    out = ROOT / name / "data"
    train, val = split(len(y), y.astype(int) if classification else None)
    xs, mean, std = standardise(x.astype(np.float64), train)
    scaling = {"source": source, "split": "train_test_split(test_size=0.2, random_state=0"
               + (", stratified)" if classification else ")"),
               "features": {"mean": [float(m) for m in mean], "std": [float(s) for s in std]}}
    if classification:
        ys = [str(int(v)) for v in y]
    else:
        y_mean, y_std = float(y[train].mean()), float(y[train].std())
        ys = [fmt((v - y_mean) / y_std) for v in y]
        scaling["target"] = {"mean": y_mean, "std": y_std}
    header = [f"x__{j}" for j in range(x.shape[1])] + ["y"]
    rows = [[fmt(v) for v in xs[i]] + [ys[i]] for i in range(len(y))]
    write_csv(out / "train.csv", header, [rows[i] for i in train])
    write_csv(out / "validation.csv", header, [rows[i] for i in val])
    with open(out / "scaling.json", "w", encoding="utf-8") as f:
        json.dump(scaling, f, indent=2)
        f.write("\n")
    print(f"{name}: {len(train)} train / {len(val)} validation")


def main() -> None:
    make_digits()
    wine = load_wine()
    make_tabular("wine_mlp", wine.data, wine.target, True, "UCI Wine via sklearn.datasets.load_wine")
    iris = load_iris()
    make_tabular("iris_mlp", iris.data, iris.target, True, "UCI Iris via sklearn.datasets.load_iris")
    diabetes = load_diabetes(scaled=False)
    make_tabular("diabetes_regression", diabetes.data, diabetes.target, False,
                 "Efron et al. 2004 diabetes data via sklearn.datasets.load_diabetes(scaled=False)")


if __name__ == "__main__":
    main()
