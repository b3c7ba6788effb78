"""docs/architecture.md names real files: every repository path it cites exists, and every engine module
its layer table lists (``name.py``) is in engine/, so the document cannot drift from the tree unnoticed."""
from __future__ import annotations

import os
import re

from tests.support.paths import ROOT

DOC = os.path.join(ROOT, "docs", "architecture.md")


def cited_paths(text: str) -> list:
    return sorted(set(re.findall(r"`((?:engine|console_app|scripts|tests|bench|docs|nnconsole)/[\w./<>-]*)`", text)))


def test_every_cited_path_exists():
    text = open(DOC, encoding="utf-8").read()
    paths = [p for p in cited_paths(text) if "<" not in p]  # console_app/<key>/ is a pattern
    assert len(paths) > 20
    missing = [p for p in paths if not os.path.exists(os.path.join(ROOT, p))]
    assert missing == []


def test_every_engine_module_in_the_layer_table_exists():
    text = open(DOC, encoding="utf-8").read()
    table = text.split("## The layers", 1)[1].split("## In process", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("|") and "engine/" in line]
    modules = set()
    for row in rows:
        for cell_module in re.findall(r"`([a-z_]+\.py)`", row):
            modules.add(cell_module)
        for bare in re.findall(r"`([a-z_]+)`", row):  # dataset_csv, batching ... listed without .py
            if os.path.exists(os.path.join(ROOT, "engine", bare + ".py")):
                modules.add(bare + ".py")
    assert len(modules) > 15
    missing = [m for m in sorted(modules) if not (os.path.exists(os.path.join(ROOT, "engine", m))
                                                  or os.path.exists(os.path.join(ROOT, "engine", "project", m))
                                                  or os.path.exists(os.path.join(ROOT, "engine", "interop", m))
                                                  or os.path.exists(os.path.join(ROOT, "engine", "layers", m))
                                                  or os.path.exists(os.path.join(ROOT, "console_app", m)))]
    assert missing == []
