"""An import either gives a valid project or its report names every problem (issue 26, item 7).

nnabla's own test networks (tests/data/interop/nnabla_tests, see its README) are imported with ``nnconsole
import`` and the saved project is then read by ``nnconsole info``: when info refuses it, each problem info names
is in the import's report (and its event); when the report names none, info accepts the project, and its learned
parameter count is the one nnabla's loader reads from the same file.
"""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from nnconsole.engine.cli.main import main
from tests.support.paths import INTEROP_DATA

CASES = os.path.join(INTEROP_DATA, "nnabla_tests")
FILES = sorted(f for f in os.listdir(CASES) if f.endswith(".nntxt"))


def _import_then_info(tmp_path, capsys, name: str) -> tuple:
    """(import report event, info's exit code, info's output) for one file."""
    out, events = str(tmp_path / "imported.yaml"), str(tmp_path / "events.jsonl")
    assert main(["import", os.path.join(CASES, name), "-o", out, "--events", events]) == 0
    capsys.readouterr()
    with open(events) as fh:
        (event,) = [json.loads(line) for line in fh if '"import_finished"' in line]
    code = main(["info", out])
    captured = capsys.readouterr()
    return event, code, captured.out + captured.err


def _problem_lines(info_output: str) -> list:
    return [line.strip()[2:] for line in info_output.splitlines() if line.strip().startswith("- ")]


@pytest.mark.parametrize("name", FILES)
def test_every_problem_info_finds_is_named_by_the_import(tmp_path, capsys, name):
    event, code, text = _import_then_info(tmp_path, capsys, name)
    if code == 0:
        assert event["problems"] == [] and "not valid yet" not in event["report"]
        return
    found = _problem_lines(text)
    assert found, text
    assert "not valid yet" in event["report"]
    assert sorted(event["problems"]) == sorted(found)  # every one, with its place and fix
    for problem in found:
        assert problem in event["report"]


def test_nnabla_variable_names_become_usable_layer_names(tmp_path, capsys):
    event, code, text = _import_then_info(tmp_path, capsys, "n0001_bool_fill.nntxt")
    assert code != 0 and not any("'/'" in p for p in event["problems"])  # '@test/input' is layer 'input' now
    assert any("BoolFill" in p for p in event["problems"]) and any("no loss layer" in p for p in event["problems"])


@pytest.mark.parametrize("name, learned", [("n0005_nnc_logistic.nntxt", 785), ("elman_net_main.nntxt", 1625)])
def test_valid_imports_count_what_nnabla_reads(tmp_path, capsys, name, learned):
    import nnabla as nn
    from nnabla.utils import load

    event, code, text = _import_then_info(tmp_path, capsys, name)
    assert code == 0 and event["problems"] == [], text
    assert not any("warm-up" in u for u in event["unsupported"])  # NNC's "None" warm-up is no warm-up
    total = [line.split() for line in text.splitlines() if line.startswith("total")][0]
    nn.clear_parameters()
    load.load([os.path.join(CASES, name)], prepare_data_iterator=False)
    by_nnabla = sum(int(np.prod(v.shape)) for v in nn.get_parameters(grad_only=False).values())
    nn.clear_parameters()
    assert int(total[1].replace(",", "")) == by_nnabla == learned
