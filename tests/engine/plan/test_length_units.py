"""LR update interval and warm-up given in iterations or in epochs, as NNC allows (issue 16).

An interval in single-worker iterations is divided by the worker count (exactly: see plan.exact_interval); an
interval in epochs is invariant, since an epoch of an N-worker run already has N times fewer iterations. The
plan turns both into iterations of the run, and every file format keeps (or says it converted) the unit.
"""
from __future__ import annotations

import math

import pytest

from nnconsole.engine.plan.worker_plan import make_plan
from nnconsole.engine.plan.record import PlanError
from nnconsole.engine.plan.explain import format_plan_table
from nnconsole.engine.project import model
from nnconsole.engine.check.validate import check_settings
from nnconsole.engine.plan.schedule import learning_rate
from tests.support.projects import plan_project


def _project(interval: int = 0, interval_unit: str = "iterations", warmup: int = 0, warmup_unit: str = "iterations",
             multiplier: float = 0.5, batch: int = 32) -> model.Project:
    project = plan_project(batch=batch, lr=0.1, interval=interval, multiplier=multiplier, warmup_iterations=warmup)
    project.optimizer.lr_update_interval_unit = interval_unit
    project.optimizer.warmup_unit = warmup_unit
    return project


# ------------------------------------------------------------------------------------ the arithmetic, exactly
# 1,000 samples, batch 32 per worker: ceil(1000 / 32N) = 32, 16, 8 iterations per epoch on 1, 2, 4 workers.
@pytest.mark.parametrize("workers,ipe,interval,warmup", [(1, 32, 96, 64), (2, 16, 48, 32), (4, 8, 24, 16)])
def test_an_interval_and_a_warmup_in_epochs_are_whole_epochs_of_the_run_on_any_worker_count(workers, ipe, interval,
                                                                                              warmup):
    plan = make_plan(_project(3, "epochs", 2, "epochs"), workers=workers, dataset_size=1000)
    assert plan.iterations_per_epoch == ipe
    assert (plan.effective_lr_update_interval, plan.effective_lr_multiplier) == (interval, 0.5)  # 3 epochs
    assert (plan.effective_warmup_iterations, plan.total_warmup_iterations) == (warmup, warmup)  # 2 epochs
    p = plan.schedule_params()
    base = 0.1 * workers  # linear scaling
    for epoch in range(2, 12):  # after the warm-up the LR halves every 3 epochs, whatever N is
        first = epoch * ipe
        assert learning_rate(p, first) == base * 0.5 ** (epoch // 3)
        assert learning_rate(p, first + ipe - 1) == base * 0.5 ** (epoch // 3)
    assert learning_rate(p, warmup // 2) == pytest.approx(base / 2)


@pytest.mark.parametrize("workers,interval,multiplier,warmup", [(1, 12, 0.5, 10), (2, 6, 0.5, 5), (4, 3, 0.5, 3)])
def test_an_interval_and_a_warmup_in_iterations_are_divided_by_the_worker_count(workers, interval, multiplier,
                                                                               warmup):
    plan = make_plan(_project(12, "iterations", 10, "iterations"), workers=workers, dataset_size=1000)
    assert (plan.effective_lr_update_interval, plan.effective_lr_multiplier) == (interval, multiplier)
    assert plan.effective_warmup_iterations == warmup  # 10 / 4 = 2.5, rounded half up


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_epochs_that_do_not_divide_evenly_still_change_the_lr_at_epoch_starts(workers):
    # 1,000 samples, batch 30: ceil(1000 / 30N) = 34, 17, 9 iterations per epoch
    plan = make_plan(_project(3, "epochs", batch=30), workers=workers, dataset_size=1000)
    ipe = math.ceil(1000 / (30 * workers))
    assert plan.effective_lr_update_interval == 3 * ipe
    p = plan.schedule_params()
    assert [learning_rate(p, e * ipe) / learning_rate(p, 0) for e in (2, 3, 5, 6, 9)] == [1, 0.5, 0.5, 0.25, 0.125]


def test_epochs_need_the_dataset_size_and_the_plan_says_which_setting():
    plan = make_plan(_project(3, "epochs", 2, "epochs"), workers=4)
    assert plan.effective_lr_update_interval is None and plan.total_warmup_iterations is None
    table = format_plan_table([plan])
    assert "? (3 epochs)" in table and "? (2 epochs)" in table
    assert any("LR update interval (optimizer.lr_update_interval) 3 epochs: its iterations are known once" in n
               for n in plan.notes)
    with pytest.raises(PlanError, match=r"optimizer.warmup_iterations 2 epochs \(optimizer.warmup_unit\)"):
        plan.schedule_params()
    no_warmup = make_plan(_project(3, "epochs"), workers=4)
    with pytest.raises(PlanError, match=r"optimizer.lr_update_interval 3 epochs \(optimizer.lr_update_interval_unit"):
        no_warmup.schedule_params()
    # a multiplier of 1 never changes the rate: the unknown interval does not matter
    assert make_plan(_project(3, "epochs", multiplier=1.0), workers=4).schedule_params().lr_update_interval == 0


def test_the_plan_table_and_notes_show_the_run_iterations_beside_the_epochs():
    plans = [make_plan(_project(3, "epochs", 2, "epochs"), workers=n, dataset_size=1000) for n in (1, 2, 4)]
    table = format_plan_table(plans)
    row = next(line for line in table.splitlines() if line.startswith("LR update interval"))
    assert row.split()[3:] == ["96", "(3", "epochs)", "48", "(3", "epochs)", "24", "(3", "epochs)"]
    note = next(n for n in plans[2].notes if n.startswith("LR update interval"))
    assert note.startswith("LR update interval (optimizer.lr_update_interval) 3 epochs = 3 x 8 iterations per "
                           "epoch = 24 iterations on each of 4 workers")
    assert "lr-interval-not-multiple" not in plans[2].warning_codes()  # epochs never need a corrected multiplier


def test_a_zero_length_in_epochs_is_never_and_no_warmup():
    plan = make_plan(_project(0, "epochs", 0, "epochs"), workers=4)
    assert (plan.effective_lr_update_interval, plan.effective_warmup_iterations) == (0, 0)
    assert plan.schedule_params().lr_update_interval == 0


def test_a_unit_is_validated_and_refused_by_the_plan_with_its_path():
    project = _project(3, "epoch")
    problems = check_settings(project)
    assert [p.path for p in problems] == ["optimizer.lr_update_interval_unit"]
    assert "did you mean 'epochs'" in problems[0].fix
    with pytest.raises(PlanError, match="optimizer.lr_update_interval_unit must be one of iterations, epochs"):
        make_plan(project)
    project = _project(warmup=3, warmup_unit="Epochs")
    assert [p.path for p in check_settings(project)] == ["optimizer.warmup_unit"]


# ------------------------------------------------------------------------------------ project files
def test_an_existing_project_without_units_still_counts_iterations(tmp_path):
    from nnconsole.engine.project.io import load_project, save_project

    path = tmp_path / "p.yaml"
    save_project(_project(10, warmup=4), str(path))
    text = path.read_text()
    assert "lr_update_interval_unit: iterations" in text and "warmup_unit: iterations" in text
    path.write_text(text.replace("  lr_update_interval_unit: iterations\n", "").replace("  warmup_unit: iterations\n",
                                                                                       ""))
    old = load_project(str(path))
    assert (old.optimizer.lr_update_interval_unit, old.optimizer.warmup_unit) == ("iterations", "iterations")


def test_units_round_trip_through_project_yaml(tmp_path):
    from nnconsole.engine.project.io import load_project, save_project

    path = tmp_path / "p.yaml"
    save_project(_project(3, "epochs", 2, "epochs"), str(path))
    back = load_project(str(path)).optimizer
    assert (back.lr_update_interval, back.lr_update_interval_unit, back.warmup_iterations, back.warmup_unit) == \
        (3, "epochs", 2, "epochs")


def test_a_hostile_unit_in_a_file_is_a_message_naming_the_line(tmp_path):
    from nnconsole.engine.project.errors import ProjectError
    from nnconsole.engine.project.io import load_project, save_project

    path = tmp_path / "p.yaml"
    save_project(_project(3), str(path))
    path.write_text(path.read_text().replace("lr_update_interval_unit: iterations", "lr_update_interval_unit: [1]"))
    with pytest.raises(ProjectError) as err:
        load_project(str(path))
    assert "optimizer.lr_update_interval_unit" in str(err.value) and "p.yaml" in str(err.value)


# ------------------------------------------------------------------------------------ NNC and nnabla files
def _sdcproj(tmp_path, unit: str) -> str:
    from tests.support.nnc_files import sdcproj_with_optimizer

    return sdcproj_with_optimizer(tmp_path, [
        "SolverName=Sgd", "SolverParameterNum=1", "SolverParameterName_0=LearningRate", "SolverParameter_0=0.1",
        "WeightDecay=0", "LearningRateScheduler=Exponential", "LearningRateMultiplier=0.5",
        "LearningRateUpdateInterval=3", f"LearningRateUpdateIntervalUnit={unit}", "LearningRateWarmupScheduler=Linear",
        "LearningRateWarmupLength=2", f"LearningRateWarmupLengthUnit={unit}"])


@pytest.mark.parametrize("unit,name", [("0", "epochs"), ("1", "iterations")])
def test_sdcproj_units_round_trip_unconverted(tmp_path, unit, name):
    from nnconsole.engine.interop.files import import_file
    from nnconsole.engine.interop.sdcproj.exporter import export_sdcproj

    result = import_file(_sdcproj(tmp_path, unit))
    opt = result.project.optimizer
    assert (opt.lr_update_interval, opt.lr_update_interval_unit, opt.warmup_iterations, opt.warmup_unit) == \
        (3, name, 2, name)
    assert not [u for u in result.unsupported if "epochs" in u]  # nothing converted away, nothing to report
    out = tmp_path / "back.sdcproj"
    export_sdcproj(result.project, str(out))
    text = out.read_text()
    assert f"LearningRateUpdateIntervalUnit={unit}" in text and f"LearningRateWarmupLengthUnit={unit}" in text
    back = import_file(str(out)).project.optimizer
    assert (back.lr_update_interval, back.lr_update_interval_unit, back.warmup_iterations, back.warmup_unit) == \
        (3, name, 2, name)


def test_nntxt_export_converts_epochs_to_iterations_says_so_and_the_import_restores_them(tmp_path):
    from nnconsole.engine.interop.files import export_nntxt, import_file
    from nnconsole.engine.interop.nntxt.reader import read_proto

    project = import_file(_sdcproj(tmp_path, "0")).project  # 48 rows, batch 8: 6 iterations per epoch
    out = tmp_path / "p.nntxt"
    result = export_nntxt(project, str(out))
    solver = read_proto(str(out))[0].optimizer[0].solver
    assert (solver.exponential_scheduler_param.iter_interval, solver.linear_warmup_scheduler_param.warmup_iter) == \
        (18, 12)
    notes = "\n".join(result.notes)
    assert "optimizer.lr_update_interval 3 epochs is written as 18 iterations (6 iterations per epoch" in notes
    assert "optimizer.warmup_iterations 2 epochs is written as 12 iterations" in notes
    back = import_file(str(out)).project.optimizer
    assert (back.lr_update_interval, back.lr_update_interval_unit, back.warmup_iterations, back.warmup_unit) == \
        (3, "epochs", 2, "epochs")
    # a tool that reads only nnabla's fields (no nnconsole comment) gets the iterations, in iterations
    plain = tmp_path / "plain.nntxt"
    export_nntxt(project, str(plain), with_extras=False)
    other = import_file(str(plain)).project.optimizer
    assert (other.lr_update_interval, other.lr_update_interval_unit, other.warmup_iterations, other.warmup_unit) == \
        (18, "iterations", 12, "iterations")


def test_a_hand_edited_nntxt_count_is_kept_with_a_note(tmp_path):
    from nnconsole.engine.interop.files import export_nntxt, import_file

    project = import_file(_sdcproj(tmp_path, "0")).project
    out = tmp_path / "p.nntxt"
    export_nntxt(project, str(out))
    out.write_text(out.read_text().replace("iter_interval: 18", "iter_interval: 20"))
    result = import_file(str(out))
    opt = result.project.optimizer
    assert (opt.lr_update_interval, opt.lr_update_interval_unit) == (20, "iterations")
    assert (opt.warmup_iterations, opt.warmup_unit) == (2, "epochs")
    assert any("optimizer.lr_update_interval was 3 epochs (18 iterations) when exported" in n for n in result.notes)


def test_nntxt_export_without_the_training_csv_reports_the_lossy_length(tmp_path):
    from nnconsole.engine.interop.files import export_nntxt

    project = _project(3, "epochs", 2, "epochs")
    project.network.layers[2].params = {"out_shape": [10]}
    project.datasets.training = str(tmp_path / "missing.csv")
    result = export_nntxt(project, str(tmp_path / "p.nntxt"))
    text = "\n".join(result.unsupported)
    assert "optimizer.lr_update_interval 3 epochs: .nntxt counts iterations" in text
    assert "optimizer.warmup_iterations 2 epochs" in text


def test_the_single_worker_schedule_of_an_optimizer_counts_its_epochs():
    from nnconsole.engine.plan.schedule import from_optimizer

    opt = _project(3, "epochs", 2, "epochs").optimizer
    p = from_optimizer(opt, 320, iterations_per_epoch=32)
    assert (p.lr_update_interval, p.warmup_iterations) == (96, 64)  # was 3 and 2 iterations, the unit ignored
    assert p == make_plan(_project(3, "epochs", 2, "epochs"), workers=1, dataset_size=1000).schedule_params()
    with pytest.raises(ValueError, match="optimizer.lr_update_interval 3 epochs needs the iterations per epoch"):
        from_optimizer(opt, 320)
