"""docs/architecture.md tells the truth: its package map is generated from the packages' docstrings and the
import contracts (scripts/architecture_map.py) and is current, every package says what it holds, and every
repository path the page cites exists."""
from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.support.paths import ROOT

DOC = os.path.join(ROOT, "docs", "architecture.md")
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import architecture_map  # noqa: E402  (scripts/ is not a package)


def cited_paths(text: str) -> list:
    return sorted(set(re.findall(r"`((?:engine|console_app|scripts|tests|bench|docs|nnconsole)/[\w./<>-]*)`", text)))


def test_every_cited_path_exists():
    text = open(DOC, encoding="utf-8").read()
    paths = [p for p in cited_paths(text) if "<" not in p]  # console_app/<key>/ is a pattern
    assert len(paths) > 40
    missing = [p for p in paths if not os.path.exists(os.path.join(ROOT, p))]
    assert missing == []


def test_the_package_map_is_generated_and_current():
    result = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gen_docs.py"), "--check"],
                            capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    text = open(DOC, encoding="utf-8").read()
    assert architecture_map.package_map() in text


def test_every_package_says_what_it_holds_and_every_engine_package_is_a_layer():
    for folder in ("engine", "console_app"):
        for rel, doc, modules in architecture_map.packages(folder):
            assert len(doc) > 40, f"{rel}/__init__.py needs a docstring saying what the package holds"
    layered = {name.strip() for row in architecture_map.engine_layers() for name in row.split("|")}
    top_packages = {rel.split("/")[1] for rel, _, _ in architecture_map.packages("engine") if rel.count("/") == 1}
    assert top_packages <= layered
    top_modules = {f[:-3] for f in os.listdir(os.path.join(ROOT, "engine")) if f.endswith(".py") and f != "__init__.py"}
    assert top_modules <= layered and len(top_modules) <= 6  # the engine's top stays small


def test_a_package_missing_from_the_layers_contract_stops_the_map(monkeypatch):
    real = architecture_map.engine_layers()
    monkeypatch.setattr(architecture_map, "engine_layers", lambda: [row for row in real if row != "comm"])
    try:
        architecture_map.package_map()
    except SystemExit as exc:
        assert "engine/comm" in str(exc)
    else:
        raise AssertionError("an unlisted package went unnoticed")
