"""Issue 16: all 15 of NNC's solvers plus Lamb and Lion, checked against NNC's definitions
(tests/data/nnc_reference/solver_component.txt) and nnabla's own solvers: names and defaults, one update
step, .sdcproj import -> .nntxt export -> import, epoch units of the schedule, and weight-decay semantics.
"""
from __future__ import annotations

import inspect
import os
import re
from typing import Dict, List, Tuple

import numpy as np
import pytest

from nnconsole.engine.interop.files import import_file
from nnconsole.engine.interop.nntxt.exporter import export_nntxt
from nnconsole.engine.interop.nntxt.importer import import_nntxt
from nnconsole.engine.plan.worker_plan import exact_interval, make_plan
from nnconsole.engine.project import model
from nnconsole.engine.project.schema import SOLVER_SPECS, SOLVER_TABLE
from nnconsole.engine.runtime.solvers import applies_weight_decay_itself, make_solver
from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.project.schema import SOLVERS
from tests.support.nnc_files import sdcproj_with_optimizer
from tests.support.paths import DATA, TEMPLATES

REFERENCE = os.path.join(DATA, "nnc_reference", "solver_component.txt")
NNC_SOLVERS = ("AdaBelief", "Adadelta", "Adagrad", "Adam", "AdamW", "Adamax", "AdaBound", "AMSGRAD", "AMSBound",
               "Lars", "Momentum", "Nesterov", "RMSprop", "Sgd", "SgdW")
# NNC's short names for the learning rate and weight decay are the optimizer's own settings in nnconsole.
SHORT_TO_KEY = {"alpha": "learning_rate", "lr": "learning_rate", "wd": "weight_decay"}


def nnc_solvers() -> Dict[str, List[Tuple[str, str, float]]]:
    """NNC's solver_component.txt: solver -> [(NNC name, nnabla short name, NNC default)] in NNC's order."""
    solvers: Dict[str, List[Tuple[str, str, float]]] = {}
    current = ""
    for line in open(REFERENCE, encoding="utf-8"):
        line = line.strip()
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1]
            solvers[current] = []
        elif re.match(r"param_\d+=", line):
            name, short, default = line.split("=", 1)[1].split(";")
            solvers[current].append((name, short, float(default.rstrip("s"))))  # Adadelta's eps reads 1.0e-6s
    return solvers


# ------------------------------------------------------------------------------------------- the table
def test_nncs_solver_list_is_the_fifteen_and_each_has_a_row():
    assert tuple(nnc_solvers()) == NNC_SOLVERS
    assert set(NNC_SOLVERS) | {"Lamb", "Lion"} == set(SOLVERS)
    assert [s.name for s in SOLVER_TABLE if not s.nnc] == ["Lamb", "Lion"]


@pytest.mark.parametrize("name", NNC_SOLVERS)
def test_each_row_has_nncs_parameter_names_order_and_defaults(name):
    spec = SOLVER_SPECS[name]
    reference = nnc_solvers()[name]
    assert [n for n, _, _ in spec.nnc] == [n for n, _, _ in reference]
    for (nnc_name, key, default), (_, short, nnc_default) in zip(spec.nnc, reference):
        assert key == SHORT_TO_KEY.get(short, short), (name, nnc_name)
        assert default == pytest.approx(nnc_default), (name, nnc_name)
        if key not in ("learning_rate", "weight_decay"):
            assert spec.params[key] == pytest.approx(nnc_default), (name, key)  # nnabla's default is NNC's
    assert spec.nnc_learning_rate == reference[0][2]
    # NNC's "Weight Decay" parameter is exactly the solvers that have nnabla's wd argument
    assert ("weight_decay" in [k for _, k, _ in spec.nnc]) == spec.has_wd_argument


@pytest.mark.parametrize("spec", SOLVER_TABLE, ids=lambda s: s.name)
def test_each_row_has_nnablas_learning_rate_name_and_every_other_argument(spec):
    import nnabla.solvers as S

    signature = inspect.signature(getattr(S, spec.name))
    names = list(signature.parameters)
    assert names[0] == spec.learning_rate_name
    wd = ["wd"] if spec.has_wd_argument else []
    assert sorted(names[1:]) == sorted(list(spec.params) + wd)  # nothing nnabla accepts is left out
    for flag in spec.flags:
        assert isinstance(signature.parameters[flag].default, bool)


# ------------------------------------------------------------------------------------ one update step
def chosen_values(spec) -> Dict[str, float]:
    """A non-default value for every parameter (flags on), so a dropped parameter changes the result."""
    return {k: (1.0 if k in spec.flags else (v * 0.5 if v else 0.1)) for k, v in spec.params.items()}


@pytest.mark.parametrize("spec", SOLVER_TABLE, ids=lambda s: s.name)
def test_three_updates_equal_nnablas_own_solver_called_directly(spec):
    import nnabla as nn
    import nnabla.solvers as S

    values = chosen_values(spec)
    opt = model.Optimizer(solver=spec.name, learning_rate=0.05, solver_params=dict(values), weight_decay=0.02)
    # nnabla's solver built straight from its signature, argument by argument
    signature = inspect.signature(getattr(S, spec.name))
    direct_args = {}
    for arg, p in list(signature.parameters.items())[1:]:
        value = opt.weight_decay if arg == "wd" else values[arg]
        direct_args[arg] = bool(value) if isinstance(p.default, bool) else value
    rng = np.random.RandomState(3)
    start = {"a": rng.randn(4, 3).astype(np.float32), "b": rng.randn(5).astype(np.float32)}
    grads = [{k: rng.randn(*v.shape).astype(np.float32) for k, v in start.items()} for _ in range(3)]
    results = []
    for solver in (make_solver(opt, 0.05), getattr(S, spec.name)(0.05, **direct_args)):
        params = {k: nn.Variable.from_numpy_array(v.copy(), need_grad=True) for k, v in start.items()}
        solver.set_parameters(params)
        for g in grads:
            for k, v in params.items():
                v.g = g[k]
            solver.update()
        results.append({k: v.d.copy() for k, v in params.items()})
    for k in start:
        np.testing.assert_allclose(results[0][k], results[1][k], rtol=0, atol=1e-6)
        assert np.abs(results[0][k] - start[k]).max() > 1e-5, (spec.name, "the update moved nothing")


def test_a_flag_that_is_not_0_or_1_is_refused_with_the_setting_named():
    from nnconsole.engine.check.validate import check_settings

    opt = model.Optimizer(solver="AdaBelief", solver_params={"rectify": 0.5})
    with pytest.raises(ValueError, match="optimizer.solver_params.rectify"):
        make_solver(opt, 0.001)
    project = model.Project(optimizer=opt)
    assert "optimizer.solver_params.rectify" in [p.path for p in check_settings(project)]


# ----------------------------------------------------------------------------- weight-decay semantics
def _one_step(solver_name: str, wd: float, w0: np.ndarray, g: np.ndarray, alpha: float) -> np.ndarray:
    """One update as the trainer does it: solver.weight_decay(wd) unless the solver decays itself."""
    import nnabla as nn

    opt = model.Optimizer(solver=solver_name, learning_rate=alpha, weight_decay=wd)
    solver = make_solver(opt, alpha)
    w = nn.Variable.from_numpy_array(w0.copy(), need_grad=True)
    solver.set_parameters({"w": w})
    w.g = g
    if not applies_weight_decay_itself(opt):
        solver.weight_decay(wd)
    solver.update()
    return w.d.copy()


def test_adamw_decays_decoupled_and_adam_adds_l2_to_the_gradient():
    w0 = np.array([2.0, -1.0, 0.5, 3.0], np.float32)
    g = np.array([0.3, 0.2, -0.4, -0.5], np.float32)
    alpha, wd, eps = 0.01, 0.1, 1e-8
    # Adam's first step moves by alpha * g' / (|g'| + eps) with g' = g + wd * w (L2 coupled to the gradient)
    coupled = g + wd * w0
    np.testing.assert_allclose(_one_step("Adam", wd, w0, g, alpha), w0 - alpha * coupled / (np.abs(coupled) + eps),
                               atol=1e-6)
    # AdamW: the Adam step on g alone, then w -= wd * w (nnabla's eta_t = 1 before any schedule)
    np.testing.assert_allclose(_one_step("AdamW", wd, w0, g, alpha), w0 - alpha * g / (np.abs(g) + eps) - wd * w0,
                               atol=1e-6)
    # SgdW: momentum SGD step plus the decoupled decay
    np.testing.assert_allclose(_one_step("SgdW", wd, w0, g, alpha), w0 - alpha * g - wd * w0, atol=1e-6)
    # Sgd (engine's weight decay): w -= alpha * (g + wd * w)
    np.testing.assert_allclose(_one_step("Sgd", wd, w0, g, alpha), w0 - alpha * (g + wd * w0), atol=1e-6)
    # Lion (nnabla fuses solver.weight_decay into its update, decoupled): w -= lr * (sign(u) + wd * w)
    np.testing.assert_allclose(_one_step("Lion", wd, w0, g, alpha), w0 - alpha * (np.sign(g) + wd * w0), atol=1e-6)
    # AdaBelief without WD Decouple: nnabla ignores its wd, so the decay is L2 on the gradient (solver.weight_decay)
    np.testing.assert_allclose(_one_step("AdaBelief", wd, w0, g, alpha), _one_step("AdaBelief", 0.0, w0, g + wd * w0,
                                                                                   alpha), atol=1e-6)
    # AdaBelief with WD Decouple: w *= 1 - alpha * wd, then its step on g alone
    plain = _one_step("AdaBelief", 0.0, w0, g, alpha)
    decoupled = _one_step_with("AdaBelief", {"weight_decouple": 1.0}, wd, w0, g, alpha)
    np.testing.assert_allclose(decoupled, w0 * (1 - alpha * wd) - (w0 - plain), atol=1e-6)
    assert np.abs(decoupled - plain).max() > 1e-4


def _one_step_with(solver_name, params, wd, w0, g, alpha):
    import nnabla as nn

    opt = model.Optimizer(solver=solver_name, learning_rate=alpha, weight_decay=wd, solver_params=dict(params))
    solver = make_solver(opt, alpha)
    w = nn.Variable.from_numpy_array(w0.copy(), need_grad=True)
    solver.set_parameters({"w": w})
    w.g = g
    assert applies_weight_decay_itself(opt)
    solver.update()
    return w.d.copy()


# -------------------------------------------------------------- .sdcproj import, .nntxt export, back again
def nnc_values(name: str) -> Dict[str, float]:
    """A non-default value for each of NNC's parameters of ``name`` (flags 1), by nnconsole key."""
    return {key: (1.0 if key in SOLVER_SPECS[name].flags else (d * 0.5 if d else 0.25))
            for _, key, d in SOLVER_SPECS[name].nnc}


@pytest.mark.parametrize("name", NNC_SOLVERS)
def test_sdcproj_solver_parameters_survive_import_nntxt_export_and_nnablas_loader(name, tmp_path):
    from nnabla.utils import load

    spec = SOLVER_SPECS[name]
    values = nnc_values(name)
    lines = [f"SolverName={name}", f"SolverParameterNum={len(spec.nnc)}"]
    for k, (nnc_name, key, _) in enumerate(spec.nnc):
        lines += [f"SolverParameterName_{k}={nnc_name}", f"SolverParameter_{k}={values[key]!r}"]
    lines += ["WeightDecay=0", "LearningRateScheduler=Exponential", "LearningRateMultiplier=1",
              "LearningRateUpdateInterval=0"]
    result = import_file(sdcproj_with_optimizer(tmp_path, lines))
    assert result.unsupported == []
    opt = result.project.optimizer
    assert opt.solver == name and opt.learning_rate == pytest.approx(values["learning_rate"])
    assert opt.weight_decay == pytest.approx(values.get("weight_decay", 0.0))
    expected = {k: v for k, v in values.items() if k not in ("learning_rate", "weight_decay")}
    assert opt.solver_params == pytest.approx(dict(spec.params, **expected))
    out = tmp_path / "out.nntxt"
    export_nntxt(result.project, str(out), with_extras=False)  # the protobuf alone, no nnconsole comment
    back = import_nntxt(str(out)).project.optimizer
    assert (back.solver, back.learning_rate, back.weight_decay) == \
        (name, pytest.approx(opt.learning_rate), pytest.approx(opt.weight_decay))
    assert back.solver_params == pytest.approx(opt.solver_params)
    info = load.load([str(out)], prepare_data_iterator=False, exclude_parameter=True)
    built = info.optimizers["Optimizer"]
    assert built.solver.name == name and built.solver.learning_rate() == pytest.approx(opt.learning_rate)


@pytest.mark.parametrize("name", ["Lamb", "Lion"])
def test_lamb_and_lion_round_trip_through_nntxt_with_a_note_that_nnc_lacks_them(name, tmp_path):

    project = load_valid_project(os.path.join(TEMPLATES, "digits_cnn", "project.yaml"))
    spec = SOLVER_SPECS[name]
    project.optimizer = model.Optimizer(solver=name, learning_rate=0.003, solver_params=chosen_values(spec))
    out = tmp_path / "x.nntxt"
    exported = export_nntxt(project, str(out), with_extras=False)
    assert any(name in note and "Neural Network Console has no such solver" in note for note in exported.notes)
    back = import_nntxt(str(out)).project.optimizer
    assert (back.solver, back.learning_rate) == (name, pytest.approx(0.003))
    assert back.solver_params == pytest.approx(chosen_values(spec))


def test_sdcproj_without_a_learning_rate_takes_nncs_default_for_the_solver(tmp_path):
    lines = ["SolverName=Momentum", "SolverParameterNum=1", "SolverParameterName_0=Momentum",
             "SolverParameter_0=0.8", "WeightDecay=0"]
    opt = import_file(sdcproj_with_optimizer(tmp_path, lines)).project.optimizer
    assert (opt.solver, opt.learning_rate, opt.solver_params) == ("Momentum", 0.01, {"momentum": 0.8})


def test_nnc_weightdecay_replaces_adamws_own_decay_as_nnabla_cli_does(tmp_path):
    # nnabla_cli (NNC's trainer) calls solver.weight_decay(WeightDecay) before every update, which for AdamW
    # sets the decoupled rate: the effective decay is WeightDecay's.
    lines = ["SolverName=AdamW", "SolverParameterNum=2", "SolverParameterName_0=Alpha", "SolverParameter_0=0.001",
             "SolverParameterName_1=Weight Decay", "SolverParameter_1=0.0001", "WeightDecay=0.0005"]
    result = import_file(sdcproj_with_optimizer(tmp_path, lines))
    assert result.project.optimizer.weight_decay == pytest.approx(0.0005)
    assert any("WeightDecay=0.0005 replaces AdamW's Weight Decay 0.0001" in n for n in result.notes)


def test_adabeliefs_weight_decay_without_wd_decouple_has_no_effect_as_in_nnc(tmp_path):
    spec = SOLVER_SPECS["AdaBelief"]
    lines = ["SolverName=AdaBelief", f"SolverParameterNum={len(spec.nnc)}"]
    for k, (nnc_name, _, default) in enumerate(spec.nnc):  # NNC's defaults: Weight Decay 1e-4, WD Decouple 0
        lines += [f"SolverParameterName_{k}={nnc_name}", f"SolverParameter_{k}={default!r}"]
    result = import_file(sdcproj_with_optimizer(tmp_path, lines + ["WeightDecay=0"]))
    assert result.project.optimizer.weight_decay == 0.0
    assert any("no effect without WD Decouple" in n for n in result.notes)


# --------------------------------------------------------------------- schedule lengths in epochs
@pytest.mark.parametrize("unit,interval,warmup,expect_unit", [("0", 3, 2, "epochs"), ("1", 3, 2, "iterations"),
                                                              (None, 5, 7, "iterations")])
def test_interval_and_warmup_keep_nncs_unit_and_the_plan_makes_them_iterations(tmp_path, unit, interval, warmup,
                                                                              expect_unit):
    # the sample has 48 training rows and batch 8: 6 iterations per epoch on one worker
    lines = ["SolverName=Sgd", "SolverParameterNum=1", "SolverParameterName_0=LearningRate", "SolverParameter_0=0.1",
             "WeightDecay=0", "LearningRateScheduler=Exponential", "LearningRateMultiplier=0.5",
             f"LearningRateUpdateInterval={interval}", "LearningRateWarmupScheduler=Linear",
             f"LearningRateWarmupLength={warmup}"]
    if unit is not None:
        lines += [f"LearningRateUpdateIntervalUnit={unit}", f"LearningRateWarmupLengthUnit={unit}"]
    project = import_file(sdcproj_with_optimizer(tmp_path, lines)).project
    opt = project.optimizer
    assert (opt.lr_update_interval, opt.warmup_iterations) == (interval, warmup)  # as the user set them
    assert (opt.lr_update_interval_unit, opt.warmup_unit) == (expect_unit, expect_unit)
    for workers in (1, 2, 4):
        plan = make_plan(project, workers=workers, policy="linear", dataset_size=48)
        if expect_unit == "epochs":  # whole epochs of the run: 6, 3, 2 iterations each on 1, 2, 4 workers
            ipe = -(-48 // (8 * workers))
            assert (plan.effective_lr_update_interval, plan.effective_lr_multiplier) == (interval * ipe, 0.5)
            assert plan.effective_warmup_iterations == warmup * ipe
        else:
            assert (plan.effective_lr_update_interval, plan.effective_lr_multiplier) == \
                pytest.approx(exact_interval(interval, 0.5, workers))
            assert plan.effective_warmup_iterations == max(1, (2 * warmup + workers) // (2 * workers))  # half up
            # the decay per training sample is NNC's: 0.5 every interval x 8 samples
            per_sample = plan.effective_lr_multiplier ** (1 / (plan.effective_lr_update_interval * 8 * workers))
            assert per_sample == pytest.approx(0.5 ** (1 / (interval * 8)))


# ------------------------------------------------------------------------------- training through the engine
@pytest.mark.parametrize("spec", SOLVER_TABLE, ids=lambda s: s.name)
def test_every_solver_trains_the_tabular_project_through_the_trainer(spec, tmp_path):
    """Each solver (its switches on, weight decay set) runs the real trainer: finite, decreasing loss."""
    import math

    from tests.support.projects import tabular_project
    from tests.support.training import train_in_process

    path = tabular_project(str(tmp_path / "p"), n=64, batch=8, epochs=3, solver=spec.name,
                           lr=SOLVER_SPECS[spec.name].nnc_learning_rate * (10 if spec.name != "Adadelta" else 1))
    project = load_valid_project(path)
    project.optimizer.solver_params = {f: 1.0 for f in spec.flags if f != "fixed_decay"}
    project.optimizer.weight_decay = 1e-4
    _, losses = train_in_process(project, str(tmp_path / "runs"))
    assert losses and all(math.isfinite(v) for v in losses)
    assert losses[-1] < losses[0], (spec.name, losses)
