"""One import path per protocol constant: a run file's name, an event name, ``RunStatus`` and ``ExitCode`` are
imported from the module that defines them (``nnconsole.engine.rundir.protocol``, ``nnconsole.engine.errors``),
never through another module that happens to import them (``store.STATUS_FILE``), so a reader finds each in one
place and a grep for its users finds them all."""
from __future__ import annotations

import ast
import os
import re
from typing import Dict, List

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SCANNED = ("engine", "console_app", "tests", "scripts", "bench")
PACKAGES = {"engine": "nnconsole.engine", "console_app": "nnconsole.app"}
DEFINING = {"nnconsole.engine.rundir.protocol": os.path.join("engine", "rundir", "protocol.py"),
            "nnconsole.engine.errors": os.path.join("engine", "errors.py")}


def defined_constants() -> Dict[str, str]:
    """Constant (UPPER_CASE) and class names each defining module assigns at its top level -> that module."""
    found = {}
    for module, path in DEFINING.items():
        with open(os.path.join(ROOT, path), encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        for node in tree.body:
            targets = [node.name] if isinstance(node, ast.ClassDef) else \
                [t.id for t in getattr(node, "targets", [getattr(node, "target", None)]) if isinstance(t, ast.Name)]
            for name in targets:
                if name.isupper() or isinstance(node, ast.ClassDef):
                    found[name] = module
    return found


def module_of(rel: str) -> str:
    top, *rest = rel[:-3].split(os.sep)
    return ".".join([PACKAGES.get(top, top)] + [p for p in rest if p != "__init__"])


def stray_imports(source: str, rel: str, constants: Dict[str, str]) -> List[str]:
    """Where ``source`` takes a constant from a module other than the one defining it: ``from M import NAME`` or
    ``alias.NAME`` with ``alias`` bound to another module."""
    here = module_of(rel)
    modules: Dict[str, str] = {}  # local name -> the module it stands for
    found = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                modules[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else \
                    alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module:
            base = node.module if not node.level else ".".join(here.split(".")[:-node.level] + [node.module])
            for alias in node.names:
                home = constants.get(alias.name)
                if home is not None and base != home and here != home:
                    found.append(f"{rel}:{node.lineno}: {alias.name} from {base} (defined in {home})")
                modules[alias.asname or alias.name] = f"{base}.{alias.name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.attr in constants:
            via = modules.get(node.value.id)
            if via is not None and via != constants[node.attr] and via.startswith("nnconsole."):
                found.append(f"{rel}:{node.lineno}: {node.value.id}.{node.attr} through {via} "
                             f"(defined in {constants[node.attr]})")
    return found


def test_protocol_constants_are_imported_from_where_they_are_defined():
    constants = defined_constants()
    assert {"STATUS_FILE", "PLAN_FILE", "RUN_DIR_EVENT", "RunStatus", "ExitCode"} <= set(constants)
    names = "(?:" + "|".join(map(re.escape, constants)) + r")\b"
    homes = "|".join(map(re.escape, DEFINING))
    # a file can break the rule only with ``x.NAME`` or an import of a NAME from elsewhere: the others need
    # no parsing, which keeps the test quick
    mentioned = re.compile(rf"\.{names}|^[ \t]*from[ \t]+(?!(?:{homes})[ \t])[\w.]+[ \t]+import[ \t]+"
                           rf"(?:\([^)]*|[^\n]*)\b{names}", re.MULTILINE)
    stray = []
    for top in SCANNED:
        for folder, dirs, files in os.walk(os.path.join(ROOT, top)):
            dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", "data", "results"))
            for name in sorted(files):
                if name.endswith(".py"):
                    rel = os.path.relpath(os.path.join(folder, name), ROOT)
                    with open(os.path.join(ROOT, rel), encoding="utf-8") as fh:
                        source = fh.read()
                    if mentioned.search(source):
                        stray += stray_imports(source, rel, constants)
    assert not stray, "import these from the module that defines them:\n" + "\n".join(stray)


def test_the_check_sees_both_ways_round():
    constants = {"STATUS_FILE": "nnconsole.engine.rundir.protocol"}
    source = ("from nnconsole.engine.rundir import store as runs\n"
              "from nnconsole.engine.rundir.store import STATUS_FILE\n"
              "from nnconsole.engine.rundir.protocol import STATUS_FILE as OK\n"
              "from nnconsole.engine.rundir import protocol\n"
              "a, b = runs.STATUS_FILE, protocol.STATUS_FILE\n")
    assert [line.split(": ")[0] for line in stray_imports(source, os.path.join("tests", "t.py"), constants)] == \
        ["tests/t.py:2", "tests/t.py:5"]
