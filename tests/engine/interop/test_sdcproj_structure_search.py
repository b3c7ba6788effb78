"""NNC's [StructureSearch] section imported as the project's search section (issue 29): enabled or not, the
method, the error x multiply-adds objective, NNC's min/max bounds, early stopping and the time limit."""
from __future__ import annotations

import os

from nnconsole.engine.check.project_file import validate
from nnconsole.engine.interop.files import import_file
from nnconsole.engine.interop.sdcproj.exporter import export_sdcproj
from tests.support.paths import INTEROP_DATA

SDCPROJ = os.path.join(INTEROP_DATA, "nnc_tiny_cnn.sdcproj")
DISABLED = ("[StructureSearch]\nEnabled=0\nMethod=Random\nObjective=ErrorAndCalculation\nValidation_Min=-1\n"
            "Validation_Max=-1\nCostMultiplyAdd_Min=-1\nCostMultiplyAdd_Max=-1\nEarlyStopping=0\nTimeLimit=\n")


def _import(tmp_path, section: str):
    text = open(SDCPROJ, encoding="utf-8").read()
    assert DISABLED in text
    for name in os.listdir(INTEROP_DATA):  # the datasets beside the copy
        if name.endswith(".csv") or os.path.isdir(os.path.join(INTEROP_DATA, name)):
            src = os.path.join(INTEROP_DATA, name)
            dst = tmp_path / name
            if not dst.exists():
                os.symlink(src, dst)
    path = tmp_path / "p.sdcproj"
    path.write_text(text.replace(DISABLED, section), encoding="utf-8")
    return import_file(str(path))


def test_a_disabled_structure_search_imports_no_search_section(tmp_path):
    assert _import(tmp_path, DISABLED).project.search is None


def test_nnc_structure_search_becomes_the_search_section(tmp_path):
    enabled = DISABLED.replace("Enabled=0", "Enabled=1").replace("CostMultiplyAdd_Max=-1", "CostMultiplyAdd_Max=50000") \
        .replace("Validation_Max=-1", "Validation_Max=0.2").replace("TimeLimit=", "TimeLimit=1:30:00")
    result = _import(tmp_path, enabled)
    search = result.project.search
    assert search.structure and search.objectives == ["error", "multiply_adds"]
    assert search.sampler == "random" and search.pruner == "none"
    assert (search.multiply_adds_min, search.multiply_adds_max, search.error_max) == (0, 50000, 0.2)
    assert search.timeout_minutes == 90
    assert any("structure search" in n for n in result.notes)
    assert not [p for p in validate(result.project, datasets=False) if p.severity == "error"]


def test_error_only_with_early_stopping_prunes_by_the_median(tmp_path):
    section = DISABLED.replace("Enabled=0", "Enabled=1").replace("Method=Random", "Method=Bayesian") \
        .replace("Objective=ErrorAndCalculation", "Objective=Error").replace("EarlyStopping=0", "EarlyStopping=1")
    search = _import(tmp_path, section).project.search
    assert (search.objectives, search.sampler, search.pruner) == (["error"], "tpe", "median")


def test_the_search_section_round_trips_through_sdcproj(tmp_path):
    enabled = DISABLED.replace("Enabled=0", "Enabled=1").replace("CostMultiplyAdd_Max=-1", "CostMultiplyAdd_Max=50000") \
        .replace("Validation_Max=-1", "Validation_Max=0.2").replace("TimeLimit=", "TimeLimit=1:30:00")
    first = _import(tmp_path, enabled).project
    out = tmp_path / "back" / "p.sdcproj"
    out.parent.mkdir()
    export_sdcproj(first, str(out))
    again = import_file(str(out)).project
    assert again.search == first.search
