"""Suite-wide settings: Qt runs offscreen, and nnabla's parameter registry starts empty per test."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")

import sys  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_nnabla_parameters():
    """Tests share one process: start and end each with nnabla's global parameter registry empty."""
    nn = sys.modules.get("nnabla")
    if nn is not None:
        nn.clear_parameters()
    yield
    nn = sys.modules.get("nnabla")
    if nn is not None:
        nn.clear_parameters()
