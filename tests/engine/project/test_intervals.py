"""Issue 13, item 22: NNC's and nnabla's Monitor Interval (epochs between validations) and nnconsole's
interval between training records (iterations) are two fields with two names, mapped on import and
export, migrated from older project files, and obeyed by the trainer.
"""
from __future__ import annotations

import json
import os

import pytest

from nnconsole.engine.project.io import loads_project
from tests.support.projects import tabular_project
from tests.support.training import train_file_in_process
from nnconsole.engine.check.project_file import load_valid_project
from tests.support.paths import INTEROP_DATA, TEMPLATES


def test_format_2_monitor_interval_becomes_log_interval_and_validation_every_epoch(tmp_path):
    text = open(os.path.join(TEMPLATES, "iris_mlp", "project.yaml")).read()
    text = text.replace("format_version: 3", "format_version: 2")
    if "monitor_interval" not in text:  # the template was written in format 3
        text = text.replace("  log_interval: 10\n", "  monitor_interval: 7\n").replace("  validation_interval: 1\n", "")
    text = text.replace("monitor_interval: 10", "monitor_interval: 7")
    path = tmp_path / "old.yaml"
    path.write_text(text)
    project = load_valid_project(str(path), check_datasets=False)
    assert (project.config.log_interval, project.config.validation_interval) == (7, 1)
    assert path.read_text() == text  # loading never rewrites the file


def test_the_old_key_in_a_current_file_names_both_new_fields():
    from nnconsole.engine.project.model import FORMAT_VERSION

    text = f"format_version: {FORMAT_VERSION}\nconfig:\n  monitor_interval: 5\n"
    try:
        loads_project(text)
    except ValueError as exc:
        assert "log_interval" in str(exc) and "validation_interval" in str(exc)
    else:
        raise AssertionError("config.monitor_interval was accepted in a current-format file")


def test_nnc_monitor_interval_is_epochs_between_validations_on_import(tmp_path):
    from nnconsole.engine.interop.files import import_file

    for name in ("nnc_tiny_cnn.sdcproj", "nnc_tiny_repeat.nntxt"):  # both say MonitorInterval / monitor_interval 5
        project = import_file(os.path.join(INTEROP_DATA, name)).project
        assert project.config.validation_interval == 5, name
        assert project.config.log_interval == 10, name  # nnconsole's own default: NNC has no such field


def test_export_writes_validation_interval_as_nnablas_monitor_interval(tmp_path):
    from nnconsole.engine.interop.files import import_file
    from nnconsole.engine.interop.nntxt.exporter import export_nntxt
    from nnconsole.engine.interop.nntxt.importer import read_proto

    project = load_valid_project(tabular_project(str(tmp_path / "p")))
    project.config.validation_interval, project.config.log_interval = 3, 17
    out = str(tmp_path / "p" / "exported.nntxt")
    export_nntxt(project, out)
    proto, _, _ = read_proto(out)
    assert proto.training_config.monitor_interval == 3  # nnabla_cli: epochs between validations
    back = import_file(out).project
    assert (back.config.validation_interval, back.config.log_interval) == (3, 17)  # 17 via nnconsole's comment


@pytest.mark.slow
def test_training_validates_every_validation_interval_epochs_and_at_the_end(tmp_path):
    path = tabular_project(str(tmp_path / "p"), n=32, batch=8, epochs=5)
    text = open(path).read()
    assert "validation_interval: 1" in text
    open(path, "w").write(text.replace("validation_interval: 1", "validation_interval: 2"))
    run = train_file_in_process(path)  # the worker's Trainer, in this process (no CLI launch)
    records = [json.loads(line) for line in open(os.path.join(run, "metrics.jsonl")) if line.strip()]
    assert [r["epoch"] for r in records if r["type"] == "validation"] == [2, 4, 5]
    train = [r["iteration"] for r in records if r["type"] == "train"]
    assert train[:4] == [2, 4, 6, 8]  # log_interval: every 2 iterations


def test_the_config_tab_offers_both_intervals_with_their_units():
    from nnconsole.app.config.commands import FIELD_LABELS
    from nnconsole.app.config.page import GLOBAL_FIELDS

    specs = {spec.dotted: spec for spec in GLOBAL_FIELDS}
    assert "config.monitor_interval" not in specs
    assert "epochs" in specs["config.validation_interval"].label.lower()
    assert "iterations" in specs["config.log_interval"].label.lower()
    assert FIELD_LABELS["config.validation_interval"] == specs["config.validation_interval"].label
