"""The package map and the import contracts of docs/architecture.md, generated from the code itself: each
package's ``__init__`` docstring and pyproject.toml's import-linter contracts (scripts/gen_docs.py splices them
into the page; tests check that the page is current, so it cannot drift from the tree)."""
from __future__ import annotations

import ast
import os
import re
from typing import List, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = (("engine", "nnconsole.engine"), ("console_app", "nnconsole.app"))


def _docstring(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return ast.get_docstring(ast.parse(fh.read())) or ""


def _one_paragraph(text: str) -> str:
    return " ".join(text.split("\n\n", 1)[0].split())


def packages(folder: str) -> List[Tuple[str, str, List[str]]]:
    """(folder path, docstring's first paragraph, module names) of every package under ``folder``."""
    found = []
    for here, dirs, files in os.walk(os.path.join(ROOT, folder)):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")) and d not in ("resources",))
        if "__init__.py" not in files:
            continue
        modules = sorted(f[:-3] for f in files if f.endswith(".py") and f != "__init__.py")
        rel = os.path.relpath(here, ROOT)
        found.append((rel, _one_paragraph(_docstring(os.path.join(here, "__init__.py"))), modules))
    return found


def engine_layers() -> List[str]:
    """The engine's layers, top to bottom, as pyproject.toml's layers contract states them."""
    text = open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8").read()
    block = re.search(r'containers = \["nnconsole\.engine"\]\s*\n(?:#[^\n]*\n)*layers = \[(.*?)\]', text, re.S)
    return re.findall(r'"([^"]+)"', block.group(1))


def forbidden_for_gui() -> List[str]:
    """The engine packages the GUI may not import (pyproject.toml's forbidden contract)."""
    text = open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8").read()
    block = re.search(r'source_modules = \["nnconsole\.app"\]\s*\nforbidden_modules = \[(.*?)\]', text, re.S)
    return [m.rsplit(".", 1)[1] for m in re.findall(r'"(nnconsole\.engine\.[\w.]+)"', block.group(1))]


def _row(rel: str, doc: str, modules: List[str]) -> str:
    listed = ", ".join(f"`{m}`" for m in modules) or "-"
    return f"| `{rel}/` | {doc.replace('|', '/')} | {listed} |"


def package_map() -> str:
    """The markdown of the package map: the engine's packages in layer order, then the GUI's."""
    engine = {rel: (doc, mods) for rel, doc, mods in packages("engine")}
    lines = ["The engine's packages, top layer first (a package may import only those below it; `a | b` are",
             "independent siblings). Each description is the package's `__init__` docstring.", "",
             "| Layer | Package | What it holds | Modules |", "|---|---|---|---|"]
    placed = set()
    for depth, row in enumerate(engine_layers(), 1):
        for name in [n.strip() for n in row.split("|")]:
            rel = f"engine/{name}"
            if rel in engine:
                for sub in sorted(r for r in engine if r == rel or r.startswith(rel + "/")):
                    doc, mods = engine[sub]
                    lines.append(f"| {depth} " + _row(sub, doc, mods))
                    placed.add(sub)
            else:  # a top-level module of the engine
                path = os.path.join(ROOT, "engine", name + ".py")
                lines.append(f"| {depth} | `engine/{name}.py` | {_one_paragraph(_docstring(path))} | - |")
    unplaced = sorted(set(engine) - placed - {"engine"})
    if unplaced:
        raise SystemExit(f"engine packages missing from the layers contract: {', '.join(unplaced)}")
    lines += ["", "The desktop app's packages (`nnconsole.app`; it may not import the engine packages "
              + ", ".join(f"`{p}`" for p in forbidden_for_gui()) + "):", "",
              "| Package | What it holds | Modules |", "|---|---|---|"]
    for rel, doc, mods in packages("console_app"):
        lines.append(_row(rel, doc, mods))
    return "\n".join(lines) + "\n"
