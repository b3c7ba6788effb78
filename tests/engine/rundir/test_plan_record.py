"""plan.json through its typed reader (``store.read_plan`` -> ``PlanRecord``): what the trainer writes reads back
figure for figure, missing and extra fields are tolerated, a damaged file is named."""
from __future__ import annotations

import dataclasses
import json
import os

import pytest

from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.plan.worker_plan import make_plan
from nnconsole.engine.rundir.protocol import PLAN_FILE
from nnconsole.engine.rundir.store import PlanRecord, read_plan
from nnconsole.engine.rundir.typed_json import RunFileError
from tests.support.projects import tabular_project


def _write(run_dir: str, data: object) -> None:
    with open(os.path.join(run_dir, PLAN_FILE), "w") as fh:
        fh.write(data if isinstance(data, str) else json.dumps(data, indent=2))


@pytest.mark.parametrize("dataset_size", [None, 1000])
def test_the_plan_the_trainer_writes_reads_back_figure_for_figure(tmp_path, dataset_size):
    project = load_valid_project(tabular_project(str(tmp_path / "p"), n=64, batch=8))
    written = make_plan(project, workers=2, dataset_size=dataset_size).to_dict()
    _write(str(tmp_path), written)  # as Trainer.__init__ writes it
    plan = read_plan(str(tmp_path))
    for field in dataclasses.fields(PlanRecord):
        assert field.name in written, f"PlanRecord.{field.name} is not a figure Plan.to_dict() writes"
        assert getattr(plan, field.name) == written[field.name], field.name
    assert (plan.workers, plan.logical_batch, plan.per_worker_batch) == (2, written["logical_batch"], 8)


def test_missing_and_unknown_fields_are_tolerated(tmp_path):
    _write(str(tmp_path), {"workers": 4, "effective_lr": 1, "from_a_newer_nnconsole": [1, 2]})
    plan = read_plan(str(tmp_path))
    assert plan == PlanRecord(workers=4, effective_lr=1.0) and isinstance(plan.effective_lr, float)
    assert read_plan(str(tmp_path / "no-run")) is None  # no plan.json (yet): None


@pytest.mark.parametrize("text, said", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "expected a JSON object"),
    ('{"workers": "two"}', "field 'workers' should be an integer or null, got 'two'"),
])
def test_a_damaged_plan_names_the_file_and_the_field(tmp_path, text, said):
    _write(str(tmp_path), text)
    with pytest.raises(RunFileError) as raised:
        read_plan(str(tmp_path))
    assert str(raised.value).startswith(os.path.join(str(tmp_path), PLAN_FILE)) and said in str(raised.value)
