"""`nnconsole info` shows a project's structure (issue 17): repeated layers marked with their repetitions,
and one table per network, headed by the optimizers that train it."""
from __future__ import annotations

from nnconsole.engine.cli.main import main
from tests.support.projects import blocks_project, gan_project, tabular_project
from tests.support.networks import resnet_like


def _rows(text: str) -> dict:
    return {line.split()[0]: line.split() for line in text.splitlines() if line.strip() and not line.startswith("-")}


def test_info_marks_each_repeated_layer_with_its_repetitions(tmp_path, capsys):
    assert main(["info", blocks_project(tmp_path, resnet_like())]) == 0
    out = capsys.readouterr().out
    rows = _rows(out)
    assert rows["layer"][-1] == "repeated"
    assert rows["c1"][-1] == "x2" and rows["r1"][-1] == "x2"  # the residual block x2
    assert rows["c2"][-1] == "x6" and rows["inner"][-1] == "x2"  # x3 inside x2; the inner RepeatStart runs twice
    assert rows["t"][-1] == "x2" and rows["stem"][-1] != "x2" and len(rows["stem"]) == 5  # outside: no mark
    assert rows["c1"][1:4] == ["Convolution", "4x4x4", "296"]  # (4*4*9 + 4) weights in each of 2 repetitions


def test_info_prints_one_table_per_network_with_its_optimizers(tmp_path, capsys):
    assert main(["info", gan_project(str(tmp_path))]) == 0
    out = capsys.readouterr().out
    main_part, generator_part = out.split("\n\n")
    assert main_part.startswith("network Main (trained by optimizer Optimizer):")
    assert generator_part.startswith("network Generator (trained by optimizer Optimizer_G):")
    assert "d_real" in main_part and "d_real" not in generator_part
    assert _rows(generator_part)["loss_gen"][1] == "SigmoidCrossEntropy"


def test_info_of_a_one_network_project_is_its_table_alone(tmp_path, capsys):
    assert main(["info", tabular_project(str(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert out.startswith("layer ") and "network" not in out and "repeated" not in out
