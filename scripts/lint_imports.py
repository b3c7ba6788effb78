"""Check the import boundaries (import-linter contracts in pyproject.toml) of the one ``nnconsole`` namespace.

import-linter finds a package's modules by walking its folder, but ``nnconsole``'s sub-packages live in
the repository's top-level folders (``package-dir`` in pyproject.toml). This script lays out that mapping
as links in a temporary folder, puts it first on ``sys.path`` and runs ``lint-imports`` there, so the
contracts are checked against the source tree as it is (no install needed). Exit status: 0 when every
contract is kept.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile

try:
    import tomllib  # Python >= 3.11
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    tomllib = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def package_dirs(root: str) -> dict:
    """``{"nnconsole.engine": "engine", ...}`` from pyproject.toml's ``[tool.setuptools] package-dir``."""
    text = open(os.path.join(root, "pyproject.toml"), encoding="utf-8").read()
    if tomllib is not None:
        return tomllib.loads(text)["tool"]["setuptools"]["package-dir"]
    import re

    line = re.search(r"^package-dir\s*=\s*\{(.*)\}\s*$", text, re.M).group(1)
    return dict(re.findall(r'"([\w.]+)"\s*=\s*"([\w./-]+)"', line))


def link_tree(root: str, where: str) -> None:
    """``where/nnconsole/...`` mirroring the installed layout, with links to the repository's folders."""
    mapping = package_dirs(root)
    os.makedirs(os.path.join(where, "nnconsole"))
    for name in os.listdir(os.path.join(root, mapping["nnconsole"])):
        if name.endswith(".py"):
            shutil.copy(os.path.join(root, mapping["nnconsole"], name), os.path.join(where, "nnconsole", name))
    for package, folder in mapping.items():
        if package != "nnconsole":
            os.symlink(os.path.join(root, folder), os.path.join(where, *package.split(".")))


def main(argv: list | None = None) -> int:
    """``lint_imports.py [REPOSITORY]``: check the contracts of REPOSITORY (default: this one)."""
    from importlinter.cli import lint_imports

    args = sys.argv[1:] if argv is None else argv
    root = os.path.abspath(args[0]) if args else ROOT
    with tempfile.TemporaryDirectory(prefix="nnconsole-lint-") as where:
        link_tree(root, where)
        sys.path.insert(0, where)
        os.chdir(where)  # lint-imports puts the working folder first on sys.path: a checkout's nnconsole/ would win
        for name in [m for m in sys.modules if m == "nnconsole" or m.startswith("nnconsole.")]:
            del sys.modules[name]  # the installed (editable) package must not answer instead
        return lint_imports(config_filename=os.path.join(root, "pyproject.toml"), no_cache=True, no_logo=True)


if __name__ == "__main__":
    raise SystemExit(main())
