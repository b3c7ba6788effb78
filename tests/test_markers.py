"""The suite's markers: opt-in tests stay out of any run that does not name them, and the quick run
(``-m "not slow and not mpi"``) leaves out what the README says it does."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers import ROOT

pytestmark = pytest.mark.slow  # pytest collections in subprocesses: ~20 s on 2 busy cores


def collected(*args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode in (0, 5), out.stdout + out.stderr  # 5: everything deselected
    return out.stdout


def test_opt_in_tests_stay_out_of_a_run_with_another_marker_expression():
    for expression in ("not slow and not mpi", "not mpi", ""):
        listing = collected("tests/test_soak.py", "tests/test_packaging.py", *(["-m", expression] if expression else []))
        assert "test_soak.py::" not in listing, expression
        assert "test_wheel_and_sdist_install_into_clean_venvs_and_train" not in listing, expression


def test_naming_an_opt_in_marker_runs_it():
    assert "test_wheel_and_sdist_install_into_clean_venvs_and_train" in collected("tests/test_packaging.py",
                                                                                  "-m", "packaging")
    assert "test_soak.py::" in collected("tests/test_soak.py", "-m", "soak")
