"""Repeat blocks in a network besides Main (issue 17): its .nntxt network gets nnabla's repeat form too, so
`nnabla_cli train` runs both optimizers and import gives the blocks back."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from nnconsole.engine.interop.files import export_nntxt, import_file
from nnconsole.engine.project.io import save_project
from nnconsole.engine.project.model import Layer
from tests.support.projects import gan_project
from nnconsole.engine.check.project_file import load_valid_project

NNABLA_CLI = os.path.join(os.path.dirname(sys.executable), "nnabla_cli")


def _generator_with_a_block(folder: str) -> str:
    """The GAN of tests/support/projects.py (gan_project) with z -> [Affine 2 -> Tanh] x2 before the generator's
    Affine."""
    path = gan_project(folder, epochs=1)
    project = load_valid_project(path)
    gen = project.networks["Generator"]
    block = [Layer("rep", "RepeatStart", ["z"], {"times": 2}), Layer("h", "Affine", ["rep"], {"out_shape": [2]}),
             Layer("h_act", "Tanh", ["h"]), Layer("rep end", "RepeatEnd", ["h_act"])]
    gen.layers[1:1] = block
    gen.layer("gen").inputs = ["rep end"]
    save_project(project, backup=False)
    return path


@pytest.mark.slow
def test_a_block_in_another_network_is_written_as_a_block_and_trains_under_nnabla_cli(tmp_path):
    project = load_valid_project(_generator_with_a_block(str(tmp_path)))
    out = str(tmp_path / "gan.nntxt")
    export_nntxt(project, out)
    text = open(out).read()
    assert 'name: "h{rep}/affine/W"' in text and 'variable_name: "h{rep}/affine/W"' in text  # optimizer's list too
    outdir = tmp_path / "train"
    outdir.mkdir()
    proc = subprocess.run([NNABLA_CLI, "train", "-c", out, "-o", str(outdir)], capture_output=True, text=True,
                          timeout=240, cwd=str(tmp_path))
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Training Completed" in log, log[-3000:]
    import nnabla as nn

    nn.clear_parameters()
    nn.load_parameters(str(outdir / "results.nnp"))
    names = set(nn.get_parameters(grad_only=False))
    nn.clear_parameters()
    assert {"h[0]/affine/W", "h[1]/affine/W", "generator/affine/W"} <= names  # the engine's names
    back = import_file(out).project.networks["Generator"]
    assert [layer.name for layer in back.layers] == [layer.name for layer in project.networks["Generator"].layers]
    assert back.layer("rep").params == {"times": 2}
