"""Check what the nnconsole wheel and sdist contain: every template with its data, and nothing else.

Run by packaging/build_dist.sh right after the build; exits 1 and names every problem found. Uses only the
standard library, so any Python 3 runs it.
Usage: python packaging/inspect_dist.py DIST_DIR [SOURCE_ROOT]
"""
from __future__ import annotations

import glob
import os
import sys
import tarfile
import zipfile
from typing import List

TEMPLATES = ("binary_digits", "diabetes_regression", "digits_cnn", "digits_search", "iris_mlp", "shapes_resnet", "wine_mlp")
FORBIDDEN_PARTS = ("tests", "__pycache__", ".nnconsole-cache", "results", ".pytest_cache", ".hypothesis",
                   ".venv", ".git", "build", "dist", "bench", "packaging")
# Where each part of the one installed package lives: in the wheel (import names) and in the sdist (folders).
WHEEL_LAYOUT = {"nnconsole": "nnconsole", "engine": "nnconsole/engine", "console_app": "nnconsole/app",
                "project_templates": "nnconsole/templates"}
SDIST_LAYOUT = {name: name for name in WHEEL_LAYOUT}


def expected_png_count(source_root: str) -> int:
    """PNG images the templates ship in the source tree (digits_cnn, binary_digits, shapes_resnet)."""
    return len(glob.glob(os.path.join(source_root, "project_templates", "*", "data", "images", "*.png")))


def check_names(kind: str, names: List[str], png_expected: int, layout: dict) -> List[str]:
    """Problems with one artefact's member names (paths relative to its root; ``layout`` maps folders there)."""
    problems = []
    templates = layout["project_templates"]
    pngs = [n for n in names if n.startswith(templates + "/") and "/data/images/" in n and n.endswith(".png")]
    if len(pngs) != png_expected:
        problems.append(f"{kind}: {len(pngs)} template PNGs, expected {png_expected}")
    for name in TEMPLATES:
        for member in ("project.yaml", "README.md", "data/train.csv", "data/validation.csv"):
            if f"{templates}/{name}/{member}" not in names:
                problems.append(f"{kind}: missing {templates}/{name}/{member}")
    for package in layout.values():
        if f"{package}/__init__.py" not in names:
            problems.append(f"{kind}: missing {package}/__init__.py")
    for n in names:
        parts = n.split("/")
        bad = [p for p in parts[:-1] if p in FORBIDDEN_PARTS]
        if bad or n.endswith((".pyc", ".nnp", ".h5")):
            problems.append(f"{kind}: unexpected member {n}")
    return problems


def inspect_wheel(path: str, png_expected: int) -> List[str]:
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        entry_points = next((zf.read(n).decode() for n in names if n.endswith(".dist-info/entry_points.txt")), "")
    problems = check_names("wheel", names, png_expected, WHEEL_LAYOUT)
    if any(n.split("/")[0] in ("engine", "console_app", "project_templates") for n in names):
        problems.append("wheel: installs a top-level package other than nnconsole")
    for script in ("nnconsole = nnconsole.cli:main", "nnconsole-gui = nnconsole.app.shell.application:main"):
        if script not in entry_points:
            problems.append(f"wheel: entry point '{script}' missing from entry_points.txt")
    print(f"wheel {os.path.basename(path)}: {len(names)} files, {os.path.getsize(path) / 1e6:.2f} MB")
    return problems


def inspect_sdist(path: str, png_expected: int) -> List[str]:
    with tarfile.open(path) as tf:
        members = [m.name for m in tf.getmembers() if m.isfile()]
    top = members[0].split("/")[0] if members else ""
    names = [m[len(top) + 1:] for m in members if m.startswith(top + "/")]
    problems = check_names("sdist", names, png_expected, SDIST_LAYOUT)
    for needed in ("pyproject.toml", "README.md", "PKG-INFO"):
        if needed not in names:
            problems.append(f"sdist: missing {needed}")
    print(f"sdist {os.path.basename(path)}: {len(names)} files, {os.path.getsize(path) / 1e6:.2f} MB")
    return problems


def main(argv: List[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    dist_dir = argv[0]
    source_root = argv[1] if len(argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    png_expected = expected_png_count(source_root)
    wheels = sorted(glob.glob(os.path.join(dist_dir, "nnconsole-[0-9]*.whl")))
    sdists = sorted(glob.glob(os.path.join(dist_dir, "nnconsole-[0-9]*.tar.gz")))
    problems = []
    if len(wheels) != 1 or len(sdists) != 1:
        problems.append(f"{dist_dir}: expected one nnconsole wheel and one sdist, found {wheels + sdists}")
    else:
        problems += inspect_wheel(wheels[0], png_expected) + inspect_sdist(sdists[0], png_expected)
    for problem in problems:
        print(f"PROBLEM: {problem}", file=sys.stderr)
    if not problems:
        print(f"contents OK: both carry 4 templates and {png_expected} PNGs, and no tests, caches or results")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
