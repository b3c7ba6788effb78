"""Export to NNC's .sdcproj (issue 16): every registered layer type round-trips .sdcproj -> project ->
.nntxt -> nnabla and trains one iteration; the templates come back from .sdcproj as themselves; the CLI
refuses to overwrite and names what NNC's file cannot hold."""
from __future__ import annotations

import glob
import math
import os
import re
import subprocess
import sys
from typing import List

import numpy as np
import pytest

from nnconsole.engine.interop.files import export_nntxt, import_file
from nnconsole.engine.interop.common import canonical_params
from nnconsole.engine.interop.sdcproj.exporter import export_sdcproj
from nnconsole.engine.layers import all_specs, find_spec
from nnconsole.engine.project.model import Datasets, Layer, Network, Project, TrainingConfig
from tests.support.networks import single_layer_network
from nnconsole.engine.check.project_file import load_valid_project
from tests.support.paths import TEMPLATES

BATCH = 40  # layer types per network: few nnabla loads, each network still small
# nnabla 1.39 runs these functions on CUDA only ("FFT forward not implemented in CPU yet"): without a GPU the
# file is built by nnabla's loader and the one training iteration runs through nnconsole's graph of the
# imported project (its DFT as matrix products, see engine/layers/types/spectral.py).
CUDA_ONLY = ("FFT", "IFFT")


def _cases():
    # loop-control types: tests/engine/network/test_repeat_blocks.py, test_recurrent_unroll.py and
    # tests/engine/interop/test_recurrent.py; types outside NNC's palette (LSTMSequence ...) cannot go to NNC's
    # format: their export report is tests/engine/layers/test_sequence_rnn.py's
    return [(s.type, p, shapes) for s in all_specs() if not s.is_input and not s.loop_control and not s.outside_nnc
            for p, shapes in s.example_cases()]


def _batches() -> List[list]:
    cases = [c for c in _cases() if c[0] not in CUDA_ONLY]
    return [cases[i:i + BATCH] for i in range(0, len(cases), BATCH)] + [[c for c in _cases() if c[0] in CUDA_ONLY]]


def _cuda_available() -> bool:
    try:
        from nnabla.ext_utils import get_extension_context
        get_extension_context("cudnn")
        return True
    except Exception:  # no nnabla-ext-cuda, or no GPU
        return False


def _with_weight_settings(layer: Layer) -> None:
    """Give each learned weight a non-default initializer and learning-rate multiplier (so the round trip
    checks every type's weight property names: W.Initializer, or Initializer for a Parameter layer)."""
    from nnconsole.engine.layers import resolve_params
    from nnconsole.engine.project.model import Initializer

    spec = find_spec(layer.type)
    with_bias = resolve_params(layer.type, layer.params).get("with_bias", True)
    for key in spec.weight_order:
        if key in spec.non_trainable or (key == "b" and not with_bias) or key not in spec.weights:
            continue
        default = spec.weights[key]
        layer.initializers[key] = Initializer("Constant", 1.0, 0.5) if default.type == "Constant" else \
            Initializer(default.type, 0.5, 0.0)
        layer.lr_multipliers[key] = 0.5


def _project(cases) -> Project:
    layers: List[Layer] = []
    for k, (type_, params, shapes) in enumerate(cases):
        chain = single_layer_network(type_, params, shapes, prefix=f"c{k}_")
        for layer in chain:
            _with_weight_settings(layer)
        layers += chain
    return Project(name="every", network=Network(layers), datasets=Datasets(training="a.csv", validation="a.csv"))


def _targets(layers: List[Layer]) -> set:
    """Input layers that are a loss's target (NNC has no such layer: the importer places them itself)."""
    return {l.inputs[1] for l in layers if find_spec(l.type).is_loss and len(l.inputs) > 1}


def _same_network(original: List[Layer], back: List[Layer]) -> None:
    """Layer by layer: name, type, inputs, parameters (defaults filled in), initializers, multipliers,
    shared scope, and the position (except a loss target Input's, which NNC's file does not hold)."""
    assert [l.name for l in back] == [l.name for l in original]
    targets = _targets(original)
    for a, b in zip(original, back):
        assert (b.type, b.inputs) == (a.type, a.inputs), a.name
        if a.type == "Input" and a.name in targets:
            continue  # the importer infers a target's shape from the loss; the loss's own test checks it
        assert canonical_params(b) == canonical_params(a), a.name
        assert (b.initializers, b.lr_multipliers, b.parameter_scope or b.name) == \
            (a.initializers, a.lr_multipliers, a.parameter_scope or a.name), a.name  # a scope of its own name: none
        if a.position is not None:
            assert b.position == a.position, a.name


def _train_one_iteration(nntxt: str, project: Project, on_nnabla: bool) -> None:
    """nnabla's own loader builds the file's training network; one forward/backward/update runs (on nnabla's
    network from the file, or with ``on_nnabla`` False on nnconsole's graph of ``project``) and moves the
    learned parameters."""
    import nnabla as nn
    import nnabla.functions as F
    import nnabla.solvers as S
    from nnabla.utils.load import load

    from nnconsole.engine.runtime.graph import build_graph

    nn.clear_parameters()
    try:
        info = load([nntxt], prepare_data_iterator=False, batch_size=2)
        assert info.optimizers
        if not on_nnabla:
            nn.clear_parameters()
            built = build_graph(project.network, 2, "train", rng=np.random.RandomState(0))
            for v in built.inputs.values():
                v.d = np.random.RandomState(0).uniform(0.1, 0.9, v.shape)
            solver = S.Sgd(0.1)
            solver.set_parameters(nn.get_parameters())
            before = {k: p.d.copy() for k, p in nn.get_parameters().items()}
            built.loss.forward()
            solver.zero_grad()
            built.loss.backward()
            solver.update()
            assert np.isfinite(built.loss.d).all()
            assert not before or any(not np.array_equal(before[k], p.d) for k, p in nn.get_parameters().items())
            return
        opt = next(iter(info.optimizers.values()))
        rng = np.random.RandomState(0)
        for var in opt.dataset_assign:
            v = var.variable_instance
            v.d = rng.uniform(0.1, 0.9, v.shape)
        losses = [v.variable_instance for v in opt.loss_variables]
        assert losses
        total = F.sink(*losses)
        before = {k: p.d.copy() for k, p in opt.solver.get_parameters().items()}
        total.forward()
        opt.solver.zero_grad()
        total.backward()
        opt.solver.update()
        after = opt.solver.get_parameters()
        if before:
            assert any(not np.array_equal(before[k], after[k].d) for k in before), "no parameter was updated"
    finally:
        nn.clear_parameters()


@pytest.mark.parametrize("batch", _batches(), ids=lambda b: f"{b[0][0]}..{b[-1][0]}")
def test_every_layer_type_round_trips_through_sdcproj_and_trains_in_nnabla(tmp_path, batch):
    project = _project(batch)
    sdc = str(tmp_path / "every.sdcproj")
    exported = export_sdcproj(project, sdc)
    assert exported.unsupported == []
    result = import_file(sdc)
    assert result.unsupported == []
    _same_network(project.network.layers, result.project.network.layers)
    nntxt = str(tmp_path / "every.nntxt")
    back = result.project
    back.datasets = Datasets(training="a.csv", validation="a.csv")
    written = export_nntxt(back, nntxt).unsupported
    assert [u for u in written if not u.startswith("iter_per_epoch")] == []  # no CSV: nothing else is lost
    needs_cuda = any(t in CUDA_ONLY for t, _p, _s in batch)
    if needs_cuda and _cuda_available():
        import nnabla as nn
        from nnabla.ext_utils import get_extension_context

        with nn.context_scope(get_extension_context("cudnn")):
            _train_one_iteration(nntxt, back, on_nnabla=True)
    else:
        _train_one_iteration(nntxt, back, on_nnabla=not needs_cuda)


def test_all_registered_types_are_covered():
    covered = {t for b in _batches() for t, _p, _s in b}
    assert covered == {s.type for s in all_specs() if not s.is_input and not s.loop_control and not s.outside_nnc}


@pytest.mark.parametrize("template", sorted(glob.glob(os.path.join(TEMPLATES, "*", "project.yaml"))),
                         ids=lambda p: os.path.basename(os.path.dirname(p)))
def test_templates_come_back_from_sdcproj_as_themselves(tmp_path, template):
    project = load_valid_project(template, check_datasets=False)
    out = os.path.join(os.path.dirname(template), f".{tmp_path.name}.sdcproj")  # next to the data, as NNC keeps it
    try:
        result = export_sdcproj(project, out)
        # NNC's file has no seed: a template's own seed is the one thing reported (and not read back)
        seed = [f"config.seed={project.config.seed}: NNC's project file has no such setting"] \
            if project.config.seed != TrainingConfig().seed else []
        # a search section's hyper-parameter ranges have no place in NNC's file: named in the notes (issue 29)
        ranges = [n for n in result.notes if n.startswith("search.params")]
        assert bool(ranges) == bool(project.search and project.search.params)
        assert (result.unsupported, [n for n in result.notes if n not in ranges]) == (seed, [])
        imported = import_file(out)
    finally:
        os.unlink(out)
    assert (imported.unsupported, imported.notes) == ([], [])
    back = imported.project
    _same_network(project.network.layers, back.network.layers)
    base = os.path.dirname(template)
    for key in ("training", "validation"):
        assert getattr(back.datasets, key) == os.path.normpath(os.path.join(base, getattr(project.datasets, key)))
    back.datasets = project.datasets
    back.config.seed = project.config.seed
    assert (back.config, back.optimizer, back.description) == (project.config, project.optimizer,
                                                                project.description)


def test_solvers_schedules_and_weights_survive_the_round_trip(tmp_path):
    from nnconsole.engine.project.model import Initializer, Optimizer, Schedule

    layers = [Layer("x", "Input", params={"shape": [4], "variable": "x"}, position=(0.0, 0.0)),
              Layer("fc", "Affine", ["x"], {"out_shape": [3]}, position=(0.0, 80.0),
                    initializers={"W": Initializer("NormalAffineHe", 0.5, 0.0), "b": Initializer("Constant", 1.0, 0.25)},
                    lr_multipliers={"W": 0.1}),
              Layer("fc2", "Affine", ["fc"], {"out_shape": [3]}, position=(0.0, 160.0), parameter_scope="fc"),
              Layer("label", "Input", params={"shape": [1], "variable": "label"}, position=(240.0, 192.0)),
              Layer("loss", "SoftmaxCrossEntropy", ["fc2", "label"], position=(0.0, 240.0))]
    for solver, params, wd, schedule in [
            ("AdamW", {"beta1": 0.8, "beta2": 0.99, "eps": 1e-6}, 0.01, Schedule(type="step", steps=[100, 200], gamma=0.5)),
            ("Momentum", {"momentum": 0.95}, 0.0005, Schedule(type="polynomial", power=2.0)),
            ("Sgd", {}, 0.0, Schedule(type="cosine"))]:
        project = Project(name="p", network=Network(layers), datasets=Datasets(training="", validation=""),
                          config=TrainingConfig(max_epoch=7, batch_size=16, precision="half"),
                          optimizer=Optimizer(solver=solver, learning_rate=0.02, weight_decay=wd,
                                              warmup_iterations=30, update_interval=2, schedule=schedule))
        project.optimizer.solver_params.update(params)
        path = str(tmp_path / f"{solver}.sdcproj")
        assert export_sdcproj(project, path).unsupported == []
        back = import_file(path).project
        with open(path, encoding="utf-8", newline="") as f:
            text = f.read()
        assert re.search(r"Property_(\d+)_Name=ParameterScope\r\nProperty_\1_Value=fc\r\n", text)
        assert re.search(r"Property_(\d+)_Name=T.Dataset\r\nProperty_\1_Value=label\r\n", text)
        _same_network(layers, back.network.layers)
        assert (back.config.max_epoch, back.config.batch_size, back.config.precision) == (7, 16, "half")
        want, got = project.optimizer, back.optimizer
        assert (got.solver, got.learning_rate, got.schedule, got.warmup_iterations, got.update_interval) == \
            (want.solver, want.learning_rate, want.schedule, 30, 2)
        assert math.isclose(got.weight_decay, wd) and all(got.solver_params[k] == v for k, v in params.items())


def _cli(*args: str, cwd: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nnconsole", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.slow
def test_cli_exports_a_project_and_refuses_to_overwrite(tmp_path):
    import shutil

    shutil.copytree(os.path.join(TEMPLATES, "iris_mlp"), tmp_path / "iris")
    run = _cli("export", "project.yaml", "--format", "sdcproj", cwd=str(tmp_path / "iris"))
    assert run.returncode == 0, run.stderr
    out = tmp_path / "iris" / "project.sdcproj"
    text = out.read_text()
    assert text.startswith("[Engine]\nSDeepEngineType=NNabla\n") and "Shuffle=1\n" in text  # NNC's own spelling
    assert "Position_0=0\nPosition_1=80\nPosition_2=240\nPosition_3=48\n" in text
    out.write_text("mine")
    out.chmod(0o640)
    again = _cli("export", "iris/project.yaml", "-f", "sdcproj", "-o", "iris/project.sdcproj", cwd=str(tmp_path))
    assert again.returncode != 0 and "--force" in again.stderr and "Traceback" not in again.stderr
    assert out.read_text() == "mine"
    forced = _cli("export", "iris/project.yaml", "-f", "sdcproj", "-o", "iris/project.sdcproj", "--force",
                  cwd=str(tmp_path))
    assert forced.returncode == 0 and "[Main_Network_Global]" in out.read_text()
    assert out.stat().st_mode & 0o777 == 0o640  # a replaced file keeps its permissions
    reimported = _cli("import", "iris/project.sdcproj", "-o", "back.yaml", cwd=str(tmp_path))
    assert reimported.returncode == 0, reimported.stderr
    info = _cli("info", "back.yaml", cwd=str(tmp_path))
    assert info.returncode == 0, info.stderr


def test_what_nnc_cannot_hold_is_reported(tmp_path):
    layers = [Layer("x", "Input", params={"shape": [4], "variable": "x"}),
              Layer("t", "Input", params={"shape": [4], "variable": "t"}),
              Layer("half", "MulScalar", ["t"], {"val": 0.5}),
              Layer("loss", "SquaredError", ["x", "half"])]
    project = Project(name="p", network=Network(layers), datasets=Datasets(training="", validation=""))
    project.config.seed = 5
    result = export_sdcproj(project, str(tmp_path / "p.sdcproj"))
    assert any("config.seed=5" in u for u in result.unsupported)
    # a computed loss target is no loss: NNC links it to the loss's T pin (side pin 1), and it comes back so
    assert not [u for u in result.unsupported if "'loss'" in u]
    assert "DestPinIndex=1" in (tmp_path / "p.sdcproj").read_text()
    back = import_file(str(tmp_path / "p.sdcproj"))
    assert back.project.network.layer("loss").inputs == ["x", "half"] and not back.unsupported


def test_a_registrations_to_sdcproj_hook_writes_what_its_property_table_cannot(tmp_path):
    """The export direction lives in the registration: a type whose parameter has no NNC property in its table
    is reported, and its ``to_sdcproj`` hook (the inverse of ``from_sdcproj``) writes it."""
    import dataclasses

    from nnconsole.engine.layers import get_spec, registry

    def read_slope(name, props, params, unsupported):
        params["alpha"] = float(props["Slope"]) / 100
        return {"Slope"}

    base = dataclasses.replace(get_spec("LeakyReLU"), type="TestLeaky", nnc_type="TestLeaky", nnc_properties={},
                               from_sdcproj=read_slope, examples=())
    layers = [Layer("x", "Input", params={"shape": [4], "variable": "x"}, position=(0.0, 0.0)),
              Layer("act", "TestLeaky", ["x"], {"alpha": 0.25}, position=(0.0, 80.0))]
    project = Project(name="p", network=Network(layers), datasets=Datasets(training="", validation=""))
    registry.register(base)
    try:
        lost = export_sdcproj(project, str(tmp_path / "a.sdcproj")).unsupported
        assert lost == ["layer 'act' (TestLeaky): parameter alpha=0.25 has no NNC property; NNC uses its default"]
        registry._REGISTRY["TestLeaky"] = dataclasses.replace(base, to_sdcproj=lambda p: {"Slope": f"{p['alpha'] * 100:g}"})
        path = str(tmp_path / "b.sdcproj")
        assert export_sdcproj(project, path).unsupported == []
        assert "Property_1_Name=Slope\r\nProperty_1_Value=25\r\n" in open(path, encoding="utf-8", newline="").read()
        back = import_file(path)
        assert back.unsupported == [] and back.project.network.layer("act").params == {"alpha": 0.25}
    finally:
        registry._REGISTRY.pop("TestLeaky")


def test_a_second_operand_is_linked_to_nncs_side_pin(tmp_path):
    """NNC links Div2's divisor to its R pin (index 1); Add2 takes both operands on its one input pin."""
    from nnconsole.engine.interop.sdcproj.reader import parse_ini

    layers = [Layer("a", "Input", params={"shape": [4], "variable": "a"}),
              Layer("b", "Input", params={"shape": [4], "variable": "b"}),
              Layer("div", "Div2", ["a", "b"]), Layer("add", "Add2", ["div", "b"]),
              Layer("t", "Input", params={"shape": [4], "variable": "t"}), Layer("loss", "SquaredError", ["add", "t"])]
    path = tmp_path / "p.sdcproj"
    export_sdcproj(Project(name="p", network=Network(layers), datasets=Datasets(training="", validation="")), str(path))
    sections = parse_ini(path.read_text(encoding="utf-8"))
    ids = {s.values["Property_0_Value"]: int(s.values["ID"]) for n, s in sections.items() if "_Layer_" in n}
    pins = {(int(s.values["SourceLayerID"]), int(s.values["DestLayerID"])): int(s.values["DestPinIndex"])
            for n, s in sections.items() if "_Link_" in n}
    assert pins[(ids["a"], ids["div"])] == 0 and pins[(ids["b"], ids["div"])] == 1
    assert pins[(ids["div"], ids["add"])] == 0 and pins[(ids["b"], ids["add"])] == 0
    assert import_file(str(path)).project.network.layer("div").inputs == ["a", "b"]


def test_a_value_with_a_line_break_is_refused_with_the_layer_named(tmp_path):
    """A line break would end the INI value and inject a key of its own: refused before anything is written."""
    from nnconsole.engine.interop.report import InteropError

    layers = [Layer("x", "Input", params={"shape": [4], "variable": "x\nType=Evil"})]
    path = tmp_path / "p.sdcproj"
    with pytest.raises(InteropError, match="layer 'x': property Dataset holds a line break"):
        export_sdcproj(Project(name="p", network=Network(layers), datasets=Datasets()), str(path))
    assert not path.exists()


def test_a_run_directory_for_sdcproj_points_to_a_project_file(tmp_path):
    run = _cli("export", str(tmp_path), "--format", "sdcproj", cwd=str(tmp_path))
    assert run.returncode != 0 and "give a project file" in run.stderr and "Traceback" not in run.stderr
