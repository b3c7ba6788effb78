"""The suite's markers: opt-in tests stay out of any run that does not name them, and the quick run
(``-m "not slow and not mpi"``) leaves out what the README says it does."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.paths import ROOT

pytestmark = pytest.mark.slow  # pytest collections in a subprocess: ~6 s on 2 busy cores

# Each listing is a separate pytest session (its own Config, so its own -m and collection hook), run one after
# another in ONE fresh interpreter: the start-up (Python, plugins, PySide6, numpy) is paid once, not per listing.
_DRIVER = """
import json, sys
import pytest
for args in json.loads(sys.argv[1]):
    print("\\n=== listing ===", flush=True)
    code = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *args])
    print(f"=== exit {int(code)} ===", flush=True)
"""


def collected(*runs: tuple) -> list:
    """The ``--collect-only`` listing of each argument tuple in ``runs``, in order."""
    out = subprocess.run([sys.executable, "-c", _DRIVER, json.dumps([list(r) for r in runs])],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    listings = out.stdout.split("\n=== listing ===\n")[1:]
    assert len(listings) == len(runs), out.stdout + out.stderr
    for listing in listings:
        code = int(listing.rsplit("=== exit ", 1)[1].split()[0])
        assert code in (0, 5), listing + out.stderr  # 5: everything deselected
    return listings


EXPRESSIONS = ("not slow and not mpi", "not mpi", "")


@pytest.fixture(scope="module")
def listings() -> list:
    """The listings both tests read: the two opt-in files under each other expression, then each opt-in
    marker named (one subprocess for all five)."""
    return collected(*[("tests/system/test_soak.py", "tests/system/test_packaging.py", *(["-m", e] if e else []))
                       for e in EXPRESSIONS],
                     ("tests/system/test_packaging.py", "-m", "packaging"), ("tests/system/test_soak.py", "-m", "soak"))


def test_opt_in_tests_stay_out_of_a_run_with_another_marker_expression(listings):
    for expression, listing in zip(EXPRESSIONS, listings):
        # the listing is real: the other tests are there
        assert "tests/system/test_packaging.py::" in listing, expression
        assert "tests/system/test_soak.py::" not in listing, expression
        assert "test_wheel_and_sdist_install_into_clean_venvs_and_train" not in listing, expression


def test_naming_an_opt_in_marker_runs_it(listings):
    packaging, soak = listings[len(EXPRESSIONS):]
    assert "test_wheel_and_sdist_install_into_clean_venvs_and_train" in packaging
    assert "tests/system/test_soak.py::" in soak
