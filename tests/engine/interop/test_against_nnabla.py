"""nnconsole.engine.interop against nnabla's own tools: NnpLoader, ``nnabla_cli forward/train`` (subprocesses) and ONNX.

One network with every layer type the exporter writes (except Embed, which needs integer inputs) runs
on random weights in the engine, from the engine's .nnp under NnpLoader and ``nnabla_cli forward``, and
from the exported .nntxt under ``nnabla_cli forward``; all must agree within 1e-5.
"""
from __future__ import annotations

import csv
import os
import subprocess
import sys

import numpy as np
import pytest

from nnconsole.engine.project.io import save_project
from nnconsole.engine.project.model import Datasets, Network, Project, TrainingConfig
from nnconsole.engine.check.project_file import load_valid_project
from tests.support.networks import coverage_layers
from tests.support.paths import INTEROP_DATA, TEMPLATES

NNABLA_CLI = os.path.join(os.path.dirname(sys.executable), "nnabla_cli")
DIGITS = os.path.join(TEMPLATES, "digits_cnn", "data")
TOL = 1e-5


@pytest.fixture(scope="module")
def digits_csv(tmp_path_factory):
    """Eight digit images (absolute paths) in NNC's CSV format."""
    folder = tmp_path_factory.mktemp("data")
    with open(os.path.join(DIGITS, "validation.csv")) as fh:
        rows = list(csv.reader(fh))
    path = folder / "data.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(rows[0])
        for r in rows[1:9]:
            w.writerow([os.path.join(DIGITS, r[0]), r[1]])
    return str(path)


def fake_run(folder, layers, csv_path, seed=0) -> str:
    """A run directory as training leaves it (project.yaml + parameters_final.h5) with random weights."""
    import nnabla as nn

    from nnconsole.engine.runtime.graph import build_graph

    os.makedirs(folder, exist_ok=True)
    project = Project(name="coverage", network=Network(layers),
                      datasets=Datasets(training=csv_path, validation=csv_path),
                      config=TrainingConfig(batch_size=4, max_epoch=1))
    save_project(project, os.path.join(folder, "project.yaml"), backup=False)
    nn.clear_parameters()
    rng = np.random.RandomState(seed)
    build_graph(project.network, 2, "train")
    for name, v in nn.get_parameters(grad_only=False).items():
        v.d = rng.uniform(0.5, 1.5, v.shape) if name.endswith("/var") else rng.randn(*v.shape) * 0.5
    nn.save_parameters(os.path.join(folder, "parameters_final.h5"))
    nn.clear_parameters()
    return str(folder)


def engine_outputs(run_dir, csv_path):
    """The engine's runtime graph (build_runtime) on the run's parameters, for every CSV row."""
    import nnabla as nn

    from nnconsole.engine.data.loading import load_dataset
    from nnconsole.engine.runtime.nnp import build_runtime

    project = load_valid_project(os.path.join(run_dir, "project.yaml"), check_datasets=False)
    ds = load_dataset(csv_path, expected_shapes={"x": (1, 8, 8), "y": (1,)})
    nn.clear_parameters()
    nn.load_parameters(os.path.join(run_dir, "parameters_final.h5"))
    rt = build_runtime(project, batch_size=ds.size)
    rt.inputs["x"].d = ds.arrays["x"]
    rt.output.forward(clear_buffer=True)
    out = rt.output.d.copy()
    nn.clear_parameters()
    return ds.arrays["x"], out


def cli_forward(config, csv_path, outdir, *extra):
    os.makedirs(outdir, exist_ok=True)
    proc = subprocess.run([NNABLA_CLI, "forward", "-c", config, *extra, "-d", csv_path, "-o", outdir,
                           "--replace_path"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "Forward Completed" in proc.stdout + proc.stderr, proc.stderr[-3000:]
    with open(os.path.join(outdir, "output_result.csv")) as fh:
        rows = list(csv.reader(fh))
    columns = [i for i, name in enumerate(rows[0]) if name.startswith("y'")]
    return np.array([[float(r[i]) for i in columns] for r in rows[1:]])


@pytest.mark.slow
def test_nnp_and_nntxt_give_the_engine_outputs_under_nnabla(tmp_path, digits_csv):
    import nnabla as nn
    from nnabla.utils.nnp_graph import NnpLoader

    from nnconsole.engine.interop.files import export_run

    run = fake_run(tmp_path / "run", coverage_layers(), digits_csv)
    x, expected = engine_outputs(run, digits_csv)
    assert expected.shape == (8, 3) and np.allclose(expected.sum(axis=1), 1.0, atol=1e-5)

    nnp = export_run(run, "nnp").path  # the run has no .nnp yet: written by nnconsole.engine.runtime.nnp.export_nnp
    assert nnp.endswith("model_final.nnp") and os.path.isfile(nnp)
    loaded = []
    for i in range(len(x)):  # batch 1: the engine's .nnp pins the batch axis of Slice (see report)
        nn.clear_parameters()
        net = NnpLoader(nnp).get_network("runtime", batch_size=1)
        net.inputs["x"].d = x[i:i + 1]
        out = list(net.outputs.values())[0]
        out.forward()
        loaded.append(out.d.copy())
    nn.clear_parameters()
    assert np.abs(np.concatenate(loaded) - expected).max() < TOL

    assert np.abs(cli_forward(nnp, digits_csv, str(tmp_path / "fw_nnp")) - expected).max() < TOL

    result = export_run(run, "nntxt", str(tmp_path / "model.nntxt"))
    params = result.extra_files[0]
    assert params.endswith("model.h5")
    got = cli_forward(result.path, digits_csv, str(tmp_path / "fw_nntxt"), "-p", params)
    assert np.abs(got - expected).max() < TOL  # the .nntxt's runtime network, at batch 4


@pytest.mark.slow
def test_exported_nntxt_trains_under_nnabla_cli(tmp_path):
    from nnconsole.engine.interop.files import export_nntxt, import_file

    project = import_file(os.path.join(INTEROP_DATA, "nnc_tiny_repeat.nntxt")).project
    project.config.max_epoch = 1
    out = tmp_path / "tiny.nntxt"
    export_nntxt(project, str(out))
    outdir = tmp_path / "train"
    outdir.mkdir()
    proc = subprocess.run([NNABLA_CLI, "train", "-c", str(out), "-o", str(outdir)], capture_output=True,
                          text=True, timeout=120)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Training Completed" in log, log[-3000:]
    assert "valid_error" in log and (outdir / "results.nnp").is_file()


def test_onnx_export_matches_the_engine_or_names_the_install(tmp_path, digits_csv):
    from nnconsole.engine.interop.report import InteropError
    from nnconsole.engine.interop.files import export_run
    from nnconsole.engine.interop.onnx_export import onnx_missing

    missing = onnx_missing()
    if missing:
        run = fake_run(tmp_path / "run", coverage_layers(onnx_friendly=True), digits_csv)
        with pytest.raises(InteropError, match="pip install"):
            export_run(run, "onnx")
        pytest.skip(missing)
    import onnx
    from onnx.reference import ReferenceEvaluator

    run = fake_run(tmp_path / "run", coverage_layers(onnx_friendly=True), digits_csv)
    x, expected = engine_outputs(run, digits_csv)
    result = export_run(run, "onnx", str(tmp_path / "m.onnx"))
    model = onnx.load(result.path)
    onnx.checker.check_model(model)
    from onnx.reference.op_run import OpRun

    class BatchNormalization(OpRun):  # onnx 1.13's reference BatchNormalization-9 rejects its own momentum
        op_domain = ""                # attribute; this is the inference formula of the ONNX specification

        def _run(self, x, scale, bias, mean, var, epsilon=None, momentum=None, training_mode=None):
            shape = (1, -1) + (1,) * (x.ndim - 2)
            y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + epsilon)
            return (y * scale.reshape(shape) + bias.reshape(shape)).astype(x.dtype),

    session = ReferenceEvaluator(model, new_ops=[BatchNormalization])
    name = model.graph.input[0].name
    got = np.concatenate([session.run(None, {name: x[i:i + 1]})[0] for i in range(len(x))])
    assert np.abs(got - expected).max() < TOL
    assert any("inference network only" in u for u in result.unsupported)

    full = fake_run(tmp_path / "run2", coverage_layers(), digits_csv)
    with pytest.raises(InteropError, match=r"LayerNormalization.*Swish|Swish.*LayerNormalization"):
        export_run(full, "onnx")


def test_export_run_cli_and_errors(tmp_path, digits_csv, capsys):
    from nnconsole.engine.cli.main import main

    run = fake_run(tmp_path / "run", coverage_layers(onnx_friendly=True), digits_csv)
    assert main(["export", run, "--format", "nnp", "-o", str(tmp_path / "m.nnp")]) == 0
    assert (tmp_path / "m.nnp").is_file() and "runtime network" in capsys.readouterr().out
    assert main(["export", run, "--format", "nnp", "--best"]) == 2
    assert "no trained model 'best'" in capsys.readouterr().err
    assert main(["export", str(tmp_path), "--format", "nntxt"]) == 2
    assert "not a run directory" in capsys.readouterr().err


def test_onnx_missing_names_the_install_command(tmp_path, monkeypatch):
    from nnconsole.engine.interop.report import InteropError
    from nnconsole.engine.interop.onnx_export import export_onnx, onnx_missing

    monkeypatch.setitem(sys.modules, "onnx", None)  # as if the package were not installed
    message = onnx_missing()
    assert message and "onnx" in message and f"{sys.executable} -m pip install onnx==1.13.1" in message
    with pytest.raises(InteropError, match="pip install onnx==1.13.1"):
        export_onnx(str(tmp_path / "m.nnp"), str(tmp_path / "m.onnx"))


def test_missing_converter_names_the_exact_no_deps_command(monkeypatch):
    """``pip install "nnconsole[onnx]"`` brings onnx but cannot bring nnabla-converter without TensorFlow: the
    export then gives the one command to paste, for the interpreter that runs nnconsole."""
    from nnconsole.engine.interop.onnx_export import onnx_missing

    monkeypatch.setitem(sys.modules, "nnabla.utils.converter.onnx", None)
    message = onnx_missing()
    assert f"{sys.executable} -m pip install --no-deps nnabla-converter==1.39.0" in message
    assert "onnx==" not in message  # onnx is installed: only what is missing is named


def test_export_never_overwrites_an_existing_file_without_force(tmp_path, digits_csv, capsys):
    """Issue 13 item 7: an existing file (the .nntxt a project came from, an earlier export) is kept."""
    from nnconsole.engine.cli.main import main

    run = fake_run(tmp_path / "run", coverage_layers(onnx_friendly=True), digits_csv)
    for fmt, name in (("nnp", "m.nnp"), ("nntxt", "m.nntxt")):
        target = tmp_path / name
        target.write_text("the user's own file")
        assert main(["export", run, "--format", fmt, "-o", str(target)]) == 2
        assert "exists" in capsys.readouterr().err and target.read_text() == "the user's own file"
    (tmp_path / "m.nntxt").unlink()
    (tmp_path / "m.h5").write_text("the user's parameters")  # the nntxt export's companion file
    assert main(["export", run, "--format", "nntxt", "-o", str(tmp_path / "m.nntxt")]) == 2
    assert "m.h5" in capsys.readouterr().err and (tmp_path / "m.h5").read_text() == "the user's parameters"
    assert not (tmp_path / "m.nntxt").exists()
    # a project's default nntxt is the file it may have been imported from
    project = os.path.join(run, "project.yaml")
    source = os.path.join(run, "project.nntxt")
    with open(source, "w") as fh:
        fh.write("imported from here")
    assert main(["export", project, "--format", "nntxt"]) == 2
    assert open(source).read() == "imported from here"
    assert main(["export", project, "--format", "nntxt", "--force"]) == 0
    assert "network" in open(source).read()
    # exporting a run's own model to its default place overwrites nothing: allowed
    assert main(["export", run, "--format", "nnp"]) == 0
    assert main(["export", run, "--format", "nnp"]) == 0
