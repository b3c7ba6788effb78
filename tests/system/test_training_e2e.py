"""End to end through the real CLI: run directory, metrics, exported .nnp, replay, template results."""
from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

from nnconsole.engine.rundir import store as runs
from tests.support.cli import nnconsole, run_dir_from
from tests.support.paths import ROOT
from tests.support.projects import tabular_project
from tests.support.training import load_h5
from nnconsole.engine.check.project_file import load_valid_project

TEMPLATES = os.path.join(ROOT, "project_templates")


def copy_template(name: str, tmp_path) -> str:
    dest = tmp_path / name
    shutil.copytree(os.path.join(TEMPLATES, name), dest, ignore=shutil.ignore_patterns(".nnconsole-cache", "results"))
    return str(dest / "project.yaml")


def validation_records(run_dir: str) -> list:
    return list(runs.iter_metrics(run_dir, "validation"))


@pytest.mark.slow
def test_digits_run_directory_metrics_and_nnp(tmp_path):
    project = copy_template("digits_cnn", tmp_path)
    out = nnconsole(["train", project, "--epochs", "2"])
    run_dir = run_dir_from(out.stdout)
    assert run_dir.startswith(str(tmp_path / "digits_cnn" / "results" / "project"))
    for name in ("snapshot.yaml", "project.yaml", "plan.json", "status.json", "metrics.jsonl", "train.log",
                 "logs/rank0.log", "parameters_final.h5", "parameters_best.h5", "model_final.nnp",
                 "model_best.nnp"):
        assert os.path.isfile(os.path.join(run_dir, name)), name
    assert open(os.path.join(run_dir, "snapshot.yaml"), "rb").read() == open(project, "rb").read()
    assert runs.read_status(run_dir).status == "finished"
    assert runs.list_checkpoints(run_dir)

    train = list(runs.iter_metrics(run_dir, "train"))
    valid = validation_records(run_dir)
    assert [r["epoch"] for r in valid] == [1, 2]
    assert valid[0]["count"] == 360
    for key in ("iteration", "epoch", "loss", "error", "lr", "samples_per_s", "elapsed", "eta",
                "allreduce_share", "time_per_iter"):
        assert key in train[-1], key
    assert train[-1]["iteration"] == 2 * 45
    assert train[0]["loss"] > train[-1]["loss"]
    assert "finished: validation loss" in out.stdout

    # The exported model loads with nnabla's own loader and gives the engine's outputs.
    import nnabla as nn
    from nnabla.utils.nnp_graph import NnpLoader

    from nnconsole.engine.data.loading import load_dataset
    from nnconsole.engine.runtime.nnp import build_runtime

    resolved = load_valid_project(os.path.join(run_dir, "project.yaml"))
    data = load_dataset(resolved.datasets.validation, expected_shapes={"x": (1, 8, 8), "y": (1,)})
    batch = data.arrays["x"][:16]
    nn.clear_parameters()
    nn.load_parameters(os.path.join(run_dir, "parameters_final.h5"))
    engine_graph = build_runtime(resolved, batch_size=16)
    engine_graph.inputs["x"].d = batch
    engine_graph.output.forward()
    expected = engine_graph.output.d.copy()
    nn.clear_parameters()

    loader = NnpLoader(os.path.join(run_dir, "model_final.nnp"))
    net = loader.get_network(loader.get_network_names()[0], batch_size=16)
    [x_var] = net.inputs.values()
    [y_var] = net.outputs.values()
    x_var.d = batch
    y_var.forward()
    np.testing.assert_allclose(y_var.d, expected, rtol=1e-5, atol=1e-6)
    assert np.allclose(expected.sum(axis=1), 1.0, atol=1e-5)  # softmax head, as NNC's runtime
    nn.clear_parameters()


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory) -> str:
    """One small CLI run that both replay tests replay, each from its own copy (replay writes beside it)."""
    project = tabular_project(str(tmp_path_factory.mktemp("replay") / "p"), n=48, epochs=2)
    return run_dir_from(nnconsole(["train", project, "-q"]).stdout)


def copy_run(run_dir: str, tmp_path) -> str:
    """A copy of ``run_dir`` alone in a results folder of its own (its project names absolute data paths)."""
    dest = tmp_path / "results" / os.path.basename(run_dir)
    shutil.copytree(run_dir, dest)
    return str(dest)


@pytest.mark.slow
def test_replay_reproduces_the_metrics(tmp_path, trained_run):
    first = copy_run(trained_run, tmp_path)
    out = nnconsole(["replay", first, "-q"])
    assert "metrics reproduced" in out.stdout
    second = [d for d in runs.list_runs(os.path.dirname(first)) if d != first][0]
    a, b = load_h5(os.path.join(first, "parameters_final.h5")), load_h5(os.path.join(second, "parameters_final.h5"))
    for name in a:
        np.testing.assert_array_equal(a[name], b[name])


@pytest.mark.slow
def test_replay_reports_a_difference(tmp_path, trained_run):
    first = copy_run(trained_run, tmp_path)
    lines = open(os.path.join(first, "metrics.jsonl")).read().splitlines()
    record = json.loads(lines[0])
    record["loss"] += 0.5
    lines[0] = json.dumps(record)
    open(os.path.join(first, "metrics.jsonl"), "w").write("\n".join(lines) + "\n")
    out = nnconsole(["replay", first, "-q"], check=False)
    assert out.returncode == 1 and "metrics differ" in out.stdout


def test_bad_project_gives_a_located_message_and_no_run(tmp_path):
    project = tabular_project(str(tmp_path / "p"))
    text = open(project).read().replace("batch_size: 8", "batch_size: -1")
    open(project, "w").write(text)
    out = nnconsole(["train", project], check=False)
    assert out.returncode == 2
    assert "config.batch_size" in out.stderr and "project.yaml:" in out.stderr
    assert "Traceback" not in out.stderr
    assert not os.path.exists(tmp_path / "p" / "results")


@pytest.mark.slow
def test_validate_info_and_plan_commands(tmp_path):
    project = copy_template("digits_cnn", tmp_path)
    validated = nnconsole(["validate", project]).stdout
    assert "OK" in validated
    assert validated.splitlines() == [f"{project}: OK (12 layers, 13,706 parameters, "
                                      "91,776 multiply-adds per sample)"]
    info = nnconsole(["info", project]).stdout
    assert "conv1" in info and "13,706" in info
    plan = nnconsole(["plan", project, "--gpus", "1,2,4"]).stdout
    assert "logical batch" in plan and "128" in plan
    rows = {line[:20].strip(): line[20:].split() for line in plan.splitlines()[2:] if line.strip()}
    assert plan.splitlines()[0].split() == ["N=1", "N=2", "N=4"]
    assert rows["workers"] == ["1", "2", "4"]
    assert rows["logical batch"] == ["32", "64", "128"]  # per-worker batch 32 x workers
    assert "  - Logical batch 128 = per-worker batch 32 x 4 workers x update interval 1." in plan.splitlines()
    plans = json.loads(nnconsole(["plan", project, "--gpus", "1,4", "--json"]).stdout)
    assert [p["logical_batch"] for p in plans] == [32, 128]


def test_every_subcommand_has_help(capsys):
    from nnconsole.cli import build_parser, main  # the engine's commands and the GUI's gui

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    listed = {action.dest: action.help for action in sub._choices_actions}
    expected = {"train", "replay", "validate", "info", "plan", "templates", "new", "doctor", "evaluate", "import",
                "export", "gui"}
    assert expected <= set(sub.choices)
    for name in sub.choices:
        assert listed.get(name), f"'nnconsole {name}' has no one-line description in 'nnconsole --help'"
        with pytest.raises(SystemExit) as ended:
            main([name, "--help"])
        assert ended.value.code == 0
        out = capsys.readouterr().out
        summary = " ".join(listed[name].split()[:5])  # the description heads the page (wrapped)
        assert out.startswith(f"usage: nnconsole {name}") and summary in " ".join(out.split()), name


@pytest.mark.parametrize("template,epochs,check", [
    ("digits_cnn", None, lambda v: 1 - v["error"] >= 0.97),
    ("wine_mlp", None, lambda v: 1 - v["error"] >= 0.94),
    ("iris_mlp", None, lambda v: 1 - v["error"] >= 0.93),
    ("diabetes_regression", None, lambda v: v["loss"] < 0.7),
])
@pytest.mark.slow
def test_templates_reach_their_documented_result(tmp_path, template, epochs, check):
    project = copy_template(template, tmp_path)
    run_dir = run_dir_from(nnconsole(["train", project, "-q"], timeout=120).stdout)
    final = validation_records(run_dir)[-1]
    assert check(final), final
