"""Several networks and optimizers in one project (issue 17): file format, checks and training.

A GAN: Main is the discriminator's network (real -> 1, generated -> 0, the generator frozen by a 0
learning-rate multiplier); network Generator trains the generator against the discriminator (frozen
there). The two networks share one set of weights per parameter scope.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

from nnconsole.engine.project.errors import ProjectError
from nnconsole.engine.project.io import dumps_project, save_project
from nnconsole.engine.project.model import (ExtraOptimizer, Network)
from tests.support.projects import gan_project, tabular_project
from tests.support.training import final_params, train_in_process
from nnconsole.engine.check.project_file import load_valid_project, loads_valid_project

def test_networks_and_optimizers_round_trip_through_the_file(tmp_path):
    path = gan_project(str(tmp_path))
    text = open(path).read()
    assert "networks:\n  Generator:\n" in text and "- name: Optimizer_G\n  network: Generator\n" in text
    project = load_valid_project(path)
    assert list(project.networks) == ["Generator"] and project.optimizers[0].network == "Generator"
    assert dumps_project(project) == text


def test_a_one_network_file_is_written_as_before(tmp_path):
    path = tabular_project(str(tmp_path))
    text = open(path).read()
    assert "networks" not in text and "optimizers" not in text


@pytest.mark.parametrize("change, where, words", [
    (lambda p: setattr(p.optimizers[0], "network", "Nope"), "optimizers[0].network", "does not have"),
    (lambda p: setattr(p.optimizers[0], "dataset", "test"), "optimizers[0].dataset", "not one of"),
    (lambda p: setattr(p.optimizers[0], "name", "Optimizer"), "optimizers[0].name", "used twice"),
    (lambda p: (setattr(p.optimizers[0], "start_iteration", 9), setattr(p.optimizers[0], "end_iteration", 3)),
     "optimizers[0].end_iteration", "before it starts"),
    (lambda p: setattr(p.optimizers[0].optimizer, "learning_rate", -1.0), "optimizers[0].optimizer.learning_rate",
     ""),
    (lambda p: p.networks["Generator"].layers.pop(0), "networks.Generator.layers", "network 'Generator'"),
    (lambda p: p.networks["Generator"].layer("z").params.update(shape=[3]), "networks.Generator", "shape"),
    (lambda p: (p.networks.update({"a]\nb": p.networks.pop("Generator")}),
                setattr(p.optimizers[0], "network", "a]\nb")), "networks", "not usable"),
    (lambda p: p.networks.update({"Main": Network()}), "networks.Main", "not usable"),
])
def test_bad_optimizers_and_networks_are_located(tmp_path, change, where, words):
    path = gan_project(str(tmp_path))
    project = load_valid_project(path)
    change(project)
    with pytest.raises(ProjectError) as err:
        loads_valid_project(dumps_project(project), file=path)
    problems = err.value.problems
    assert any(p.path.startswith(where) and words in p.message and p.line for p in problems), problems


def _trainer(path: str, results: str):
    from nnconsole.engine.comm.cpu import SingleComm
    from nnconsole.engine.launch.launcher import LaunchRequest, prepare_run
    from nnconsole.engine.train.trainer import Trainer
    from nnconsole.engine.rundir.launch_options import WorkerOptions

    run_dir = prepare_run(load_valid_project(path), LaunchRequest(output=results), workers=1)
    trainer = Trainer(run_dir, SingleComm(), WorkerOptions())
    trainer.setup()
    return trainer


@pytest.mark.slow
def test_each_optimizer_updates_the_learned_weights_of_its_own_network(tmp_path):
    import nnabla as nn

    trainer = _trainer(gan_project(str(tmp_path)), str(tmp_path / "results"))
    try:
        first = sorted(name for _, group in trainer.groups for name in group)
        (gen_run,) = trainer.extra_optimizers
        second = sorted(name for _, group in gen_run.groups for name in group)
        assert first == ["disc/affine/W", "disc/affine/b"]
        assert second == ["generator/affine/W", "generator/affine/b"]
        assert sorted(nn.get_parameters()) == first + second  # one set of weights per scope
    finally:
        trainer.close()
        nn.clear_parameters()


@pytest.mark.slow
def test_a_gan_with_two_optimizers_trains_both_networks_and_exports(tmp_path):
    path = gan_project(str(tmp_path / "on"))
    run_dir, losses = train_in_process(load_valid_project(path), str(tmp_path / "on" / "results"))
    assert losses and np.all(np.isfinite(losses))
    assert os.path.isfile(os.path.join(run_dir, "model_final.nnp"))
    trained = final_params(run_dir)
    assert sorted(trained) == ["disc/affine/W", "disc/affine/b", "generator/affine/W", "generator/affine/b"]
    # the same project whose generator optimizer never runs: the generator keeps its initial weights
    idle = gan_project(str(tmp_path / "off"), start_iteration=10**6)
    idle_dir, _ = train_in_process(load_valid_project(idle), str(tmp_path / "off" / "results"))
    untouched = final_params(idle_dir)
    assert not np.allclose(trained["generator/affine/W"], untouched["generator/affine/W"])
    # checkpoints keep both optimizers' solver states (the first's, then the generator's)
    states = sorted(f.split(".solver")[1] for f in os.listdir(os.path.join(run_dir, "checkpoints")) if ".solver" in f)
    assert set(states) == {"0.h5", "1.h5"}


@pytest.mark.slow
def test_an_idle_extra_optimizer_leaves_the_one_optimizer_run_bit_identical(tmp_path):
    """The first optimizer's path is unchanged by the hooks: an extra optimizer on Main that never starts."""
    plain = tabular_project(str(tmp_path / "plain"))
    plain_dir, plain_losses = train_in_process(load_valid_project(plain), str(tmp_path / "plain" / "results"))
    hooked = tabular_project(str(tmp_path / "hooked"))
    project = load_valid_project(hooked)
    project.optimizers = [ExtraOptimizer(name="Later", start_iteration=10**6)]
    save_project(project, backup=False)
    hooked_dir, hooked_losses = train_in_process(load_valid_project(hooked), str(tmp_path / "hooked" / "results"))
    assert plain_losses == hooked_losses
    a, b = final_params(plain_dir), final_params(hooked_dir)
    assert sorted(a) == sorted(b) and all(np.array_equal(a[k], b[k]) for k in a)


@pytest.mark.slow
def test_plan_shows_one_table_per_optimizer(tmp_path):
    from tests.support.cli import nnconsole

    path = gan_project(str(tmp_path))
    out = nnconsole(["plan", path, "--gpus", "2"]).stdout
    assert "optimizer Optimizer (network Main):" in out and "optimizer Optimizer_G (network Generator):" in out
    assert out.count("\nper-worker batch") == 2
    import json
    data = json.loads(nnconsole(["plan", path, "--json"]).stdout)
    assert list(data) == ["Optimizer", "Optimizer_G"] and data["Optimizer_G"][0]["effective_lr"] == 0.01


def test_ranges_are_divided_as_nnabla_divides_them():
    from nnconsole.engine.train.optimizers import run_range

    entry = ExtraOptimizer(start_iteration=5, end_iteration=8)
    assert run_range(entry, 1) == (5, 8) and run_range(entry, 2) == (3, 4) and run_range(entry, 4) == (2, 2)
    assert run_range(ExtraOptimizer(), 2) == (0, 0)


def test_an_optimizer_on_the_validation_split_trains(tmp_path):
    """Its batches come from the validation set (here as large as the training set) in the run's seeded order."""
    path = gan_project(str(tmp_path), epochs=1, dataset="validation")
    run_dir, losses = train_in_process(load_valid_project(path), str(tmp_path / "results"))
    assert np.all(np.isfinite(losses)) and os.path.isfile(os.path.join(run_dir, "parameters_final.h5"))


@pytest.mark.slow
def test_stop_and_resume_gives_the_uninterrupted_result_with_both_optimizers(tmp_path):
    """A checkpoint keeps both optimizers' solver states: a run stopped after its first update and resumed ends
    with the weights of the run that was never stopped."""
    import nnabla as nn

    from nnconsole.engine.comm.cpu import SingleComm
    from nnconsole.engine.train.trainer import Trainer
    from nnconsole.engine.rundir.launch_options import WorkerOptions

    reference, _ = train_in_process(load_valid_project(gan_project(str(tmp_path / "ref"))), str(tmp_path / "ref" / "r"))
    trainer = _trainer(gan_project(str(tmp_path / "stop")), str(tmp_path / "stop" / "r"))
    run_dir = trainer.run_dir
    open(os.path.join(run_dir, trainer.stop.path), "w").close()  # a STOP file: honoured at the first update
    try:
        assert trainer.run() == "stopped" and trainer.iteration == 1
    finally:
        trainer.close()
        nn.clear_parameters()
    os.remove(trainer.stop.path)
    resumed = Trainer(run_dir, SingleComm(), WorkerOptions(resume=True))
    try:
        resumed.setup()
        assert resumed.iteration == 1 and resumed.run() == "finished"
    finally:
        resumed.close()
        nn.clear_parameters()
    a, b = final_params(reference), final_params(run_dir)
    assert sorted(a) == sorted(b) and max(float(np.abs(a[k] - b[k]).max()) for k in a) < 1e-6
