"""Where the checkout's folders are, for a test at any depth of tests/, and loading a script by its path.

One place computes the root, so a test file can move between folders without its paths changing meaning.
"""
from __future__ import annotations

import importlib.util
import os
from types import ModuleType

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/support/ -> checkout
TESTS = os.path.join(ROOT, "tests")
DATA = os.path.join(TESTS, "data")  # files tests read: NNC's reference, interop samples, old formats
INTEROP_DATA = os.path.join(DATA, "interop")  # NNC and nnabla sample files (.sdcproj, .nntxt) with their data
MPI_SCRIPTS = os.path.join(TESTS, "mpi_scripts")  # programs the mpi tests start under mpiexec
TEMPLATES = os.path.join(ROOT, "project_templates")


def load_script(path: str, name: str = "") -> ModuleType:
    """Import a script that is not in a package (scripts/, packaging/) by its path; ``name`` defaults to
    its file name (PyPI's ``packaging`` would shadow a plain import of packaging/)."""
    spec = importlib.util.spec_from_file_location(name or os.path.splitext(os.path.basename(path))[0], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
