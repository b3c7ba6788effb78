"""Recurrent blocks in NNC and nnabla files (issue 17): an .sdcproj and an .nntxt written as NNC writes them
import into projects that `info` accepts and that train; exported .nntxt keeps the blocks in nnabla's own
form (repeat_info, recurrent_param, a generated Delay initial value) and trains under `nnabla_cli train`."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nnconsole.engine.interop.files import export_nntxt, import_file
from nnconsole.engine.project.io import save_project
from nnconsole.engine.project.model import Datasets
from nnconsole.engine.network.shapes import infer_network
from tests.support.cli import nnconsole
from tests.support.training import train_in_process
from tests.support.paths import DATA, TEMPLATES
from tests.support.nnc_files import sdcproj_text
from nnconsole.engine.check.project_file import load_valid_project

ELMAN_NNTXT = os.path.join(DATA, "recurrent", "elman.nntxt")  # written as NNC writes a recurrent network
NNABLA_CLI = os.path.join(os.path.dirname(sys.executable), "nnabla_cli")

# An Elman network as NNC's editor saves it: computed properties (ID, Length, Output) included.
NNC_ELMAN = [
    ("x", "Input", {"Size": "6,2", "Dataset": "x"}, []),
    ("RecurrentInput", "RecurrentInput", {"Axis": "0", "ID": "RecurrentInput", "Output": "2"}, ["x"]),
    ("Concatenate", "Concatenate", {"Axis": "0"}, ["RecurrentInput", "Delay"]),
    ("Affine", "Affine", {"OutShape": "8", "W.Initializer": "NormalAffineGlorot"}, ["Concatenate"]),
    ("Tanh", "Tanh", {}, ["Affine"]),
    ("Delay", "Delay", {"Size": "8", "Initial.Dataset": "c", "Initial.Generator": "Constant",
                        "Initial.GeneratorMultiplier": "0.0", "ID": "RecurrentInput", "Output": "8"}, ["Tanh"]),
    ("RecurrentOutput", "RecurrentOutput", {"Axis": "0", "ID": "RecurrentInput", "Length": "6", "Output": "6,8"},
     ["Tanh"]),
    ("Affine_2", "Affine", {"OutShape": "6,1"}, ["RecurrentOutput"]),
    ("loss", "SquaredError", {"T.Dataset": "y"}, ["Affine_2"]),
]


def _sequence_csv(folder: Path, n: int = 32, steps: int = 6, seed: int = 0) -> str:
    """x: a (steps, 2) matrix per sample, y: the running sum of its first column (steps values)."""
    rng = np.random.RandomState(seed)
    (folder / "seq").mkdir(parents=True, exist_ok=True)
    header = "x:sequence," + ",".join(f"y__{t}__0" for t in range(steps))
    lines = [header]
    for i in range(n):
        m = rng.uniform(-1, 1, (steps, 2)).round(3)
        (folder / "seq" / f"{i}.csv").write_text("\n".join(f"{a},{b}" for a, b in m) + "\n")
        lines.append(f"seq/{i}.csv," + ",".join(f"{v:.3f}" for v in np.cumsum(m[:, 0]) / 3))
    (folder / "train.csv").write_text("\n".join(lines) + "\n")
    return "train.csv"


@pytest.mark.slow
def test_nnc_sdcproj_with_a_recurrent_block_imports_and_trains(tmp_path):
    path = tmp_path / "elman.sdcproj"
    path.write_text(sdcproj_text(NNC_ELMAN), newline="")
    result = import_file(str(path))
    assert result.unsupported == []
    layers = {layer.name: layer for layer in result.project.network.layers}
    assert layers["Delay"].inputs == ["Tanh"] and layers["Delay"].params["size"] == [8]
    assert layers["Concatenate"].inputs == ["RecurrentInput", "Delay"]
    info = infer_network(result.project.network)
    assert info.errors == [] and info.total_params == (2 + 8) * 8 + 8 + 48 * 6 + 6
    project = result.project
    project.datasets = Datasets(training=_sequence_csv(tmp_path), validation="train.csv")
    project.config.max_epoch, project.config.batch_size, project.config.device = 3, 8, "cpu"
    saved = str(tmp_path / "project.yaml")
    save_project(project, saved, backup=False)
    assert "OK" in nnconsole(["validate", saved]).stdout
    run_dir, losses = train_in_process(load_valid_project(saved), str(tmp_path / "runs"))
    assert len(losses) >= 3 and np.isfinite(losses).all() and losses[-1] < losses[0]


def test_nnc_nntxt_with_a_recurrent_block_imports(tmp_path):
    """NNC's .nntxt form (repeat_info, repeat_id, recurrent_param, Delay with an initial-value variable)."""
    result = import_file(ELMAN_NNTXT)
    assert not [u for u in result.unsupported if "recurrent" in u.lower() or "'h'" in u or "'r'" in u]
    layers = {layer.name: layer for layer in result.project.network.layers}
    assert layers["r"].type == "RecurrentInput" and layers["r"].params == {"axis": 0}
    assert layers["o"].type == "RecurrentOutput" and layers["o"].params == {"axis": 0}
    assert layers["h"].type == "Delay" and layers["h"].inputs == ["act", "h_init"]  # an Input gives h_0
    info = infer_network(result.project.network)
    assert info.errors == [] and info.layers["o"].out_shape == (5, 4) and info.total_params == 32


def test_exported_blocks_keep_nnablas_form_and_a_generated_initial_value(tmp_path):
    from nnabla.utils import nnabla_pb2
    from google.protobuf import text_format

    project = load_valid_project(os.path.join(TEMPLATES, "sine_rnn", "project.yaml"))
    project.network.layer("h_prev").params["initial_multiplier"] = 0.5
    out = tmp_path / "sine.nntxt"
    assert export_nntxt(project, str(out)).unsupported == []
    proto = text_format.Parse(out.read_text(), nnabla_pb2.NNablaProtoBuf())
    main = next(n for n in proto.network if n.name == "Main")
    assert [(r.id, r.times) for r in main.repeat_info] == [("steps", 16)]
    fns = {f.name: f for f in main.function}
    assert list(fns["fc"].repeat_id) == ["steps"] and list(fns["sequence"].repeat_id) == []
    assert fns["steps"].recurrent_param.axis == 1 and fns["sequence"].recurrent_param.length == 16
    assert list(fns["h_prev"].input) == ["h", "h_prev_initial"]
    for group in (proto.optimizer, proto.monitor, proto.executor):
        for item in group:
            assert [(g.variable_name, g.type, g.multiplier) for g in item.generator_variable] == \
                [("h_prev_initial", "Constant", 0.5)]
    back = import_file(str(out))
    delay = back.project.network.layer("h_prev")
    assert delay.inputs == ["h"] and delay.params["initial_multiplier"] == 0.5
    assert not [u for u in back.unsupported if "generator" in u]


@pytest.mark.slow
def test_exported_recurrent_template_trains_under_nnabla_cli(tmp_path):
    project = load_valid_project(os.path.join(TEMPLATES, "sine_rnn", "project.yaml"))
    project.config.max_epoch = 2
    out = tmp_path / "sine.nntxt"
    export_nntxt(project, str(out))
    (tmp_path / "train").mkdir()
    proc = subprocess.run([NNABLA_CLI, "train", "-c", str(out), "-o", str(tmp_path / "train")], capture_output=True,
                          text=True, timeout=240, cwd=tmp_path)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Training Completed" in log, log[-3000:]
    errors = [float(line.split("valid_error=")[1].split("}")[0]) for line in log.splitlines() if "valid_error=" in line]
    assert len(errors) == 2 and errors[-1] < 0.05  # nnabla's own loader unrolls the blocks and learns
