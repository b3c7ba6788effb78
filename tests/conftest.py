"""Suite-wide settings: Qt runs offscreen, nnabla's parameter registry starts empty per test, and the opt-in
tests (``soak``, ``packaging``) run only when a ``-m`` expression names them."""
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


OPT_IN_MARKERS = ("soak", "packaging")  # long or networked: run only when asked for by name (-m soak)


def pytest_collection_modifyitems(config, items):
    """Deselect the opt-in tests unless ``-m`` names their marker, so a quick run such as
    ``-m "not slow and not mpi"`` (which replaces any default ``-m``) still leaves them out."""
    expression = config.getoption("markexpr") or ""
    skipped = [m for m in OPT_IN_MARKERS if m not in expression]
    if not skipped:
        return
    keep, drop = [], []
    for item in items:
        (drop if any(item.get_closest_marker(m) for m in skipped) else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
