"""The README's two commands on a machine without CPython 3.10, through uv (opt-in: ``-m packaging``).

Every CPython 3.10 is hidden from the bootstrap (tests/support/no_python310.py); uv's downloads list is a
local JSON naming an install_only archive of this run's own 3.10, so uv installs it with no access to
GitHub. The packages still come from PyPI (uv's or pip's cache makes a rerun quick). Then, in a fresh copy of
the checkout: ``bash scripts/run-example.sh --headless`` trains the example, and ``bash scripts/run-tests.sh``
runs the quick suite, both on the Python uv installed under .nnconsole-python/.
"""
from __future__ import annotations

import os
import subprocess

import pytest

from tests.support.no_python310 import copy_checkout, downloads_json, hidden_env, python_archive, why_cannot_hide

pytestmark = [pytest.mark.packaging, pytest.mark.timeout(3600)]


@pytest.fixture(scope="module")
def uv_checkout(tmp_path_factory):
    reason = why_cannot_hide()
    if reason:
        pytest.skip(reason)
    tmp = tmp_path_factory.mktemp("no-python310")
    checkout = copy_checkout(str(tmp / "checkout"))
    listing = downloads_json(python_archive(str(tmp)), str(tmp / "python-downloads.json"))
    env = hidden_env(str(tmp), NNCONSOLE_PYTHON_DOWNLOADS_JSON=listing)
    return checkout, env


def test_run_example_sets_up_through_uv_and_trains(uv_checkout):
    checkout, env = uv_checkout
    done = subprocess.run(["bash", "scripts/run-example.sh", "--headless", "--epochs", "1"], cwd=checkout, env=env,
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "installing one with uv into" in done.stderr
    assert "finished: validation loss" in done.stdout + done.stderr
    venv_python = os.path.realpath(os.path.join(checkout, ".venv", "bin", "python"))
    assert venv_python.startswith(os.path.join(checkout, ".nnconsole-python", "pythons")), venv_python
    with open(os.path.join(checkout, ".venv", "pyvenv.cfg"), encoding="utf-8") as handle:
        assert "3.10" in handle.read()


def test_run_tests_quick_suite_passes_on_that_python(uv_checkout):
    checkout, env = uv_checkout
    done = subprocess.run(["bash", "scripts/run-tests.sh", "-m", "not slow and not mpi", "-q", "-x"], cwd=checkout,
                          env=env, capture_output=True, text=True, timeout=3000)
    tail = done.stdout[-4000:] + done.stderr[-2000:]
    assert done.returncode == 0, tail
    assert " passed" in done.stdout and " failed" not in done.stdout
