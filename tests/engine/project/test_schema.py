"""The settings schema (engine/project/schema.py) is the one place a setting or solver is declared:
the dataclass defaults, validation, the CONFIG forms and undo labels, the file mappings and the
generated docs all follow it, so adding a setting means one schema entry (plus its dataclass field)."""
from __future__ import annotations

import dataclasses
import inspect
import os
import typing

import pytest

from nnconsole.engine.project import model, schema
from nnconsole.engine.project.schema import SETTINGS, SOLVER_TABLE, value_at
from nnconsole.engine.check.validate import check_settings
from tests.support.paths import ROOT
from nnconsole.engine.project.schema import SOLVERS

SECTIONS = {"datasets": model.Datasets, "config": model.TrainingConfig, "optimizer": model.Optimizer,
            "optimizer.schedule": model.Schedule, "multi_gpu": model.MultiGPU}


def _hint_name(tp) -> str:
    return getattr(tp, "__name__", None) if typing.get_origin(tp) is None else \
        str(tp).replace("typing.", "")


def test_the_dataclasses_and_the_schema_hold_the_same_settings_types_and_defaults():
    fields = {f"{section}.{f.name}": (cls, f) for section, cls in SECTIONS.items() for f in dataclasses.fields(cls)
              if not dataclasses.is_dataclass(f.type if isinstance(f.type, type) else None)
              and f.name != "schedule"}
    assert set(fields) == {s.path for s in SETTINGS}, "every settings field has one schema entry and back"
    fresh = model.Project()
    for setting in SETTINGS:
        cls, f = fields[setting.path]
        assert value_at(fresh, setting.path) == setting.default, setting.path
        assert _hint_name(typing.get_type_hints(cls)[f.name]) == schema.KINDS[setting.kind], setting.path
    first, second = model.Project(), model.Project()
    first.multi_gpu.hosts.append("a")
    first.optimizer.solver_params["beta1"] = 0.5
    assert second.multi_gpu.hosts == [] and second.optimizer.solver_params == {}  # no shared mutable defaults


def _outside(setting):
    """A value just outside the setting's range and one on its bound, or None when it has no range."""
    if setting.choices:
        return setting.choices[0] + "x", setting.choices[-1]
    if setting.kind == "int_list":
        return [int(setting.minimum) - 1], [int(setting.minimum)]
    if setting.kind not in ("int", "float"):
        return None
    if setting.positive:
        return 0.0, 1e-9
    return setting.minimum - 1, setting.minimum


@pytest.mark.parametrize("setting", [s for s in SETTINGS if _outside(s)], ids=lambda s: s.path)
def test_validation_checks_every_bounded_setting_from_its_schema_entry(setting):
    bad, edge = _outside(setting)
    project = model.Project()
    schema.set_value_at(project, setting.path, bad)
    assert any(p.path.startswith(setting.path) for p in check_settings(project)), (setting.path, bad)
    schema.set_value_at(project, setting.path, edge)
    assert not [p for p in check_settings(project) if p.path.startswith(setting.path)], (setting.path, edge)
    if setting.maximum is not None:
        schema.set_value_at(project, setting.path, setting.maximum * 2)
        assert any(p.path == setting.path for p in check_settings(project)), setting.path


def test_a_step_schedule_with_gamma_0_is_refused_by_validate_as_by_the_plan():
    # validate accepted gamma 0 (>= 0) while the plan refused it (> 0) and the GUI refused it too.
    project = model.Project()
    project.optimizer.schedule = model.Schedule(type="step", steps=[5], gamma=0.0)
    assert [p.path for p in check_settings(project)] == ["optimizer.schedule.gamma"]


def test_solver_table_matches_nnablas_solvers():
    """Every solver's parameter names and defaults are nnabla's own (read from its signatures)."""
    import nnabla.solvers as S

    from nnconsole.engine.runtime.solvers import SOLVER_PARAMS, make_solver

    assert SOLVER_PARAMS == {spec.name: dict(spec.params) for spec in SOLVER_TABLE}
    assert SOLVERS == tuple(spec.name for spec in SOLVER_TABLE)
    for spec in SOLVER_TABLE:
        signature = inspect.signature(getattr(S, spec.name))
        names = list(signature.parameters)
        assert names[0] == spec.learning_rate_name, spec.name
        for key, default in spec.params.items():
            assert signature.parameters[key].default == pytest.approx(default), (spec.name, key)
        opt = model.Optimizer(solver=spec.name)
        assert make_solver(opt, 0.01) is not None


def test_solver_table_names_nnablas_protobuf_fields():
    from nnabla.utils import nnabla_pb2

    solver = nnabla_pb2.Solver()
    for spec in SOLVER_TABLE:
        param = getattr(solver, spec.proto_field)
        assert hasattr(param, spec.learning_rate_name), spec.name
        for key in spec.params:
            assert hasattr(param, key), (spec.name, key)


def test_every_setting_and_solver_is_in_the_generated_docs():
    text = open(os.path.join(ROOT, "docs", "project-format.md")).read()
    for setting in SETTINGS:
        section = text.split(f"### `{setting.section}`\n", 1)[1].split("\n### ", 1)[0]
        row = next((line for line in section.splitlines() if line.startswith(f"| `{setting.key}` |")), "")
        assert setting.doc.replace("|", "\\|") in row and setting.allowed() in row, setting.path
    for spec in SOLVER_TABLE:
        assert f"| `{spec.name}`" in text and f"`{spec.proto_field}`" in text


def test_every_form_setting_is_on_the_config_tab_with_the_schemas_label_bounds_and_undo_label():
    pytest.importorskip("PySide6")
    from nnconsole.app.config.commands import FIELD_LABELS
    from nnconsole.app.config.page import GLOBAL_FIELDS, MULTI_GPU_FIELDS, OPTIMIZER_FIELDS, SCHEDULE_FIELDS

    forms = {"global": GLOBAL_FIELDS, "optimizer": OPTIMIZER_FIELDS, "multi_gpu": MULTI_GPU_FIELDS}
    for form, specs in forms.items():
        assert [s.dotted for s in specs] == [s.path for s in SETTINGS if s.form == form]
        for spec in specs:
            setting = schema.setting(spec.dotted)
            assert (spec.label, spec.tooltip, tuple(spec.choices), spec.positive) == \
                (setting.label, setting.doc, setting.choices, setting.positive)
            if setting.minimum is not None:
                assert spec.minimum == setting.minimum
    for setting in SETTINGS:
        assert FIELD_LABELS[setting.path] == setting.label
    assert SCHEDULE_FIELDS["optimizer.schedule.steps"] == ("step",)


def test_a_gui_float_beyond_the_schemas_maximum_is_refused():
    pytest.importorskip("PySide6")
    from nnconsole.app.config.fields import parse_value, spec_for

    spec = spec_for(schema.setting("multi_gpu.warmup_epochs"))
    assert parse_value(spec, "3.5") == 3.5
    with pytest.raises(ValueError):
        parse_value(spec, "1e12")  # was taken, then refused by validation only


# ---- the file mappings follow the schema's NNC / nnabla names ---------------------------------------
SDCPROJ = "\r\n".join(["[Global]", "NumNetwork=1", "Network_0=Main", "[Main_Network_Global]", "NumLayer=0",
                       "NumLink=0", "[Config]", "{config}"]) + "\r\n"


def _import_sdcproj(tmp_path, config: str):
    from nnconsole.engine.interop.files import import_file

    path = tmp_path / "p.sdcproj"
    path.write_text(SDCPROJ.format(config=config))
    return import_file(str(path))


def test_nnc_config_keys_come_from_the_schema(tmp_path):
    result = _import_sdcproj(tmp_path, "MaxEpoch=7\r\nBatchSize=5\r\nMonitorInterval=3\r\nSaveBest=False")
    c = result.project.config
    assert (c.max_epoch, c.batch_size, c.validation_interval, c.save_best) == (7, 5, 3, False)


def test_a_zero_max_epoch_in_an_nnc_project_keeps_the_default_and_says_so(tmp_path):
    # It was imported as 0, a project that every later step refused.
    result = _import_sdcproj(tmp_path, "MaxEpoch=0\r\nBatchSize=-2")
    c = result.project.config
    assert (c.max_epoch, c.batch_size) == (10, 64)
    text = "\n".join(result.unsupported)
    assert "MaxEpoch=0: Max epoch must be >= 1; 10 is used" in text and "BatchSize=-2" in text


def test_a_new_setting_with_an_nnc_name_is_imported_and_exported_without_touching_the_importers(tmp_path,
                                                                                               monkeypatch):
    """Give config.log_interval file names in the schema alone: .sdcproj and .nntxt carry it."""
    from nnabla.utils import nnabla_pb2

    from nnconsole.engine.interop.settings_map import read_training_config, write_training_config

    extended = tuple(dataclasses.replace(s, nnc="LogInterval", nntxt="training_config.iter_per_epoch")
                     if s.path == "config.log_interval" else s for s in SETTINGS)
    monkeypatch.setattr(schema, "SETTINGS", extended)
    result = _import_sdcproj(tmp_path, "MaxEpoch=2\r\nLogInterval=7")
    assert result.project.config.log_interval == 7
    message = nnabla_pb2.TrainingConfig()
    write_training_config(message, result.project.config)
    assert (message.max_epoch, message.iter_per_epoch) == (2, 7)
    back = model.TrainingConfig()
    read_training_config(back, message, True, [])
    assert (back.max_epoch, back.log_interval) == (2, 7)


def test_the_plan_refuses_what_validate_refuses_for_every_setting_it_computes_with():
    from nnconsole.engine.plan.worker_plan import PLAN_SETTINGS, make_plan
    from nnconsole.engine.plan.record import PlanError

    for path in PLAN_SETTINGS:
        setting = schema.setting(path)
        bad, edge = _outside(setting)
        project = model.Project()
        schema.set_value_at(project, path, bad)
        with pytest.raises(PlanError) as err:
            make_plan(project)
        assert path in str(err.value), path
        assert any(p.path.startswith(path) for p in check_settings(project)), path
        schema.set_value_at(project, path, edge)
        make_plan(project)


def test_the_command_line_offers_the_schemas_choices():
    from nnconsole.engine.cli.main import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices
    options = {(cmd, a.dest): tuple(a.choices) for cmd in ("train", "plan") for a in sub[cmd]._actions if a.choices}
    assert options[("train", "device")] == options[("plan", "device")] == schema.DEVICES
    assert options[("train", "launcher")] == schema.LAUNCHERS
    assert options[("plan", "policy")] == schema.SCALING_POLICIES


@pytest.mark.parametrize("solver,key,value,ok", [
    ("Adam", "beta1", 5.0, False), ("Adam", "beta2", 1.0, False), ("Adam", "beta1", 0.0, True),
    ("Momentum", "momentum", -0.1, False), ("RMSprop", "decay", 0.99, True), ("Adam", "eps", -1e-8, False),
    ("Lars", "coefficient", 0.0, True)])
def test_solver_parameters_with_a_meaning_have_its_range(solver, key, value, ok):
    """A decay rate outside [0, 1) or a negative epsilon is refused naming the parameter, for the CONFIG tab's
    optimizer and for every other optimizer."""
    from nnconsole.engine.project.model import ExtraOptimizer, Optimizer, Project
    from nnconsole.engine.check.structure import check_structure

    project = Project()
    project.optimizer = Optimizer(solver=solver, solver_params={key: value})
    found = [p for p in check_settings(project) if p.path == f"optimizer.solver_params.{key}"]
    assert bool(found) != ok, found
    project = Project()
    project.optimizers = [ExtraOptimizer(optimizer=Optimizer(solver=solver, solver_params={key: value}))]
    found = [p for p in check_structure(project) if p.path == f"optimizers[0].optimizer.solver_params.{key}"]
    assert bool(found) != ok, found
