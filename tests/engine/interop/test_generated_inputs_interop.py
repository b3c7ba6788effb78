"""Generated inputs across the file formats (issue 26 item 5): an NNC project whose Inputs, losses' targets and an
unlinked Sub2 operand come from generators (Normal, Uniform, Constant) imports with every generator carried (the
report no longer lists them), validates, trains one epoch with finite losses, and exports to .sdcproj and .nntxt
that re-import to the same project; nnabla's own loader reads the generators of our .nntxt."""
from __future__ import annotations

import numpy as np
import pytest

from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.interop.common import canonical_params
from nnconsole.engine.interop.files import export_nntxt, import_file
from nnconsole.engine.interop.sdcproj.exporter import export_sdcproj
from nnconsole.engine.project.io import save_project
from tests.support.nnc_files import sdcproj_text
from tests.support.training import train_in_process

# A GAN-shaped network as NNC writes it (z and loss_fake keep a Dataset naming the real x, which NNC ignores when a
# generator is set): z ~ Normal(0, 1), u ~ Uniform(-0.5, 0.5) into Sub2's R pin, a Sub2 whose R
# pin is unlinked (NNC fills it from R.Generator, Constant 0.5), a discriminator shared by scope, and two losses
# whose targets are Constant 1 and Constant 0.
LAYERS = [
    ("x", "Input", {"Size": "2", "Dataset": "x"}, []),
    ("z", "Input", {"Size": "2", "Dataset": "x", "Generator": "Normal", "GeneratorMultiplier": "1"}, []),
    ("u", "Input", {"Size": "2", "Dataset": "u", "Generator": "Uniform", "GeneratorMultiplier": "0.5"}, []),
    ("g", "Affine", {"OutShape": "2"}, ["z"]),
    ("shifted", "Sub2", {"R.Dataset": "", "R.Generator": "Constant", "R.GeneratorMultiplier": "1"}, ["g", "u:1"]),
    ("offset", "Sub2", {"R.Dataset": "", "R.Generator": "Constant", "R.GeneratorMultiplier": "0.5"}, ["shifted"]),
    ("d_real", "Affine", {"OutShape": "1", "ParameterScope": "d"}, ["x"]),
    ("d_fake", "Affine", {"OutShape": "1", "ParameterScope": "d"}, ["offset"]),
    ("loss_real", "SigmoidCrossEntropy", {"T.Dataset": "y", "T.Generator": "Constant", "T.GeneratorMultiplier": "1"},
     ["d_real"]),
    ("loss_fake", "SigmoidCrossEntropy", {"T.Dataset": "x", "T.Generator": "Constant", "T.GeneratorMultiplier": "0"},
     ["d_fake"]),
]


def _write(tmp_path) -> str:
    rng = np.random.RandomState(0)
    rows = "\n".join(f"{a:.5f},{b:.5f}" for a, b in rng.randn(16, 2) + [2.0, -1.0])
    (tmp_path / "train.csv").write_text("x__0,x__1\n" + rows + "\n")
    path = tmp_path / "gan.sdcproj"
    path.write_text(sdcproj_text(LAYERS, datasets=["train.csv", "train.csv"]), newline="")
    return str(path)


def _generators(network) -> dict:
    """Variable -> (generator, multiplier) of the generated Inputs; variable -> None of the others."""
    return {layer.params.get("variable") or layer.name:
            (layer.params["generator"], float(layer.params["generator_multiplier"]))
            if layer.params.get("generator", "None") != "None" else None
            for layer in network.layers if layer.type == "Input"}


def _imported(tmp_path):
    result = import_file(_write(tmp_path))
    path = save_project(result.project, str(tmp_path / "gan.yaml"), backup=False)
    return result, load_valid_project(path)  # validates: the generated variables need no dataset column


def test_nnc_generators_are_carried_validated_and_trained(tmp_path):
    result, project = _imported(tmp_path)
    assert result.unsupported == []  # every generator carried, every target's shape known
    assert _generators(project.network) == {
        "x": None, "z": ("Normal", 1.0), "u": ("Uniform", 0.5), "offset_R": ("Constant", 0.5),
        "loss_real_T": ("Constant", 1.0), "loss_fake_T": ("Constant", 0.0)}
    assert project.network.layer("offset").inputs == ["shifted", "offset_R"]  # the unlinked pin now has its Input
    assert project.network.layer("shifted").inputs == ["g", "u"]
    project.config.device = "cpu"
    _run, losses = train_in_process(project, str(tmp_path / "results"))
    assert len(losses) and np.all(np.isfinite(losses))


def test_generators_survive_sdcproj_and_nntxt_round_trips(tmp_path):
    _result, project = _imported(tmp_path)
    out = str(tmp_path / "back.sdcproj")
    export = export_sdcproj(project, out)
    assert not [u for u in export.unsupported if "enerator" in u], export.unsupported
    text = open(out).read()
    assert "Property_2_Name=Generator" in text or "Name=Generator" in text
    assert "T.Generator" in text and "T.GeneratorMultiplier" in text
    again = import_file(out).project
    assert [(a.name, a.type, a.inputs, canonical_params(a), a.parameter_scope) for a in again.network.layers] == \
        [(a.name, a.type, a.inputs, canonical_params(a), a.parameter_scope) for a in project.network.layers]
    nntxt = str(tmp_path / "back.nntxt")
    export_nntxt(project, nntxt)
    twice = import_file(nntxt).project
    assert _generators(twice.network) == _generators(project.network)


def test_nnablas_loader_reads_our_generator_variables(tmp_path):
    """nnabla's own loader turns our generator_variable into its generators: Normal gives sigma = multiplier,
    Constant the multiplier itself."""
    from nnabla.utils.load import load

    _result, project = _imported(tmp_path)
    nntxt = str(tmp_path / "gan.nntxt")
    export_nntxt(project, nntxt)
    info = load([nntxt], prepare_data_iterator=False, batch_size=4)
    optimizer = info.optimizers["Optimizer"]
    made = {v.name: generator((1000, 2)) for v, generator in optimizer.generator_assign.items()}
    assert set(made) == {"z", "u", "offset_R", "loss_real_T", "loss_fake_T"}
    assert abs(made["z"].std() - 1.0) < 0.1 and np.all(np.abs(made["u"]) <= 0.5)
    assert np.all(made["offset_R"] == 0.5) and np.all(made["loss_real_T"] == 1.0)
    assert np.all(made["loss_fake_T"] == 0.0)


NNTXT = """
global_config { default_context { array_class: "CpuCachedArray" device_id: "0" backends: "cpu:float" } }
training_config { max_epoch: 1 iter_per_epoch: 4 save_best: true monitor_interval: 1 }
network {
  name: "Main"
  batch_size: 4
  variable { name: "z" type: "Buffer" shape { dim: -1 dim: 3 } }
  variable { name: "t" type: "Buffer" shape { dim: -1 dim: 1 } }
  variable { name: "fc/affine/W" type: "Parameter" shape { dim: 3 dim: 1 }
             initializer { type: "NormalAffineGlorot" multiplier: 1 } }
  variable { name: "fc/affine/b" type: "Parameter" shape { dim: 1 } initializer { type: "Constant" } }
  variable { name: "fc" type: "Buffer" shape { dim: -1 dim: 1 } }
  variable { name: "loss" type: "Buffer" shape { dim: -1 dim: 1 } }
  function { name: "fc" type: "Affine" input: "z" input: "fc/affine/W" input: "fc/affine/b" output: "fc"
             affine_param { base_axis: 1 } }
  function { name: "loss" type: "SquaredError" input: "fc" input: "t" output: "loss" }
}
dataset { name: "Training" type: "Dataset" uri: "train.csv" batch_size: 4 shuffle: true variable: "x" }
optimizer {
  name: "Optimizer" network_name: "Main" dataset_name: "Training" update_interval: 1
  solver { type: "Adam" adam_param { alpha: 0.001 beta1: 0.9 beta2: 0.999 eps: 1e-08 } }
  generator_variable { variable_name: "z" type: "Uniform" multiplier: 2.0 }
  generator_variable { variable_name: "t" type: "Constant" multiplier: 0.25 }
  loss_variable { variable_name: "loss" }
  parameter_variable { variable_name: "fc/affine/W" learning_rate_multiplier: 1 }
  parameter_variable { variable_name: "fc/affine/b" learning_rate_multiplier: 1 }
}
"""


@pytest.mark.parametrize("kind", ["Uniform", "Range"])
def test_an_nntxt_generator_variable_becomes_a_generated_input(tmp_path, kind):
    path = tmp_path / "gen.nntxt"
    path.write_text(NNTXT.replace('type: "Uniform"', f'type: "{kind}"'))
    result = import_file(str(path))
    assert not [u for u in result.unsupported if "enerator" in u], result.unsupported
    assert _generators(result.project.network) == {"z": (kind, 2.0), "t": ("Constant", 0.25)}


@pytest.mark.slow
def test_the_gan_template_exported_trains_under_nnabla_cli_with_its_generators(tmp_path):
    """nnabla_cli makes z, one and zero itself from our .nntxt (the CSV has only x), as NNC runs a GAN."""
    import os
    import subprocess
    import sys

    from tests.support.projects import gan_2d_project

    project = load_valid_project(gan_2d_project(str(tmp_path / "gan"), 32, 1))
    out = str(tmp_path / "gan.nntxt")
    export_nntxt(project, out)
    outdir = tmp_path / "train"
    outdir.mkdir()
    cli = os.path.join(os.path.dirname(sys.executable), "nnabla_cli")
    proc = subprocess.run([cli, "train", "-c", out, "-o", str(outdir)], capture_output=True, text=True, timeout=300)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Training Completed" in log, log[-3000:]


def test_an_unlinked_broadcast_to_operand_is_named_with_its_fix(tmp_path):
    """BroadcastTo's y operand has the target's shape, which the file does not give: reported, not guessed."""
    path = tmp_path / "b.sdcproj"
    path.write_text(sdcproj_text([("x", "Input", {"Size": "1", "Dataset": "x"}, []),
                                  ("b", "BroadcastTo", {"y.Generator": "Constant", "y.GeneratorMultiplier": "1"}, ["x"]),
                                  ("loss", "SquaredError", {"T.Dataset": "y"}, ["b"])]), newline="")
    result = import_file(str(path))
    assert any("layer 'b' (BroadcastTo): its y pin is not linked" in u and "link an Input" in u
               for u in result.unsupported), result.unsupported
