"""The generated references (CLI, project format) match the code, and the docs' links resolve."""
from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.support.paths import ROOT


def test_generated_references_are_current():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gen_docs.py"), "--check"],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr


def test_readme_and_docs_links_point_at_files():
    pages = [os.path.join(ROOT, "README.md")] + [os.path.join(ROOT, "docs", n) for n in os.listdir(
        os.path.join(ROOT, "docs")) if n.endswith(".md")]
    for page in pages:
        text = open(page).read()
        for target in re.findall(r"\]\(([^)#\s]+)\)", text):
            if "://" in target or target.startswith("<"):
                continue
            path = os.path.normpath(os.path.join(os.path.dirname(page), target))
            assert os.path.exists(path), f"{os.path.relpath(page, ROOT)} links to missing {target}"
