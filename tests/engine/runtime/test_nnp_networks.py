"""The runtime .nnp carries every network besides Main (issue 17): a GAN's Generator, run by nnabla's own
NnpLoader, gives the engine's forward of that network."""
from __future__ import annotations

import os

import numpy as np

from nnconsole.engine.project.io import save_project
from nnconsole.engine.project.templates import create_from_template
from tests.support.training import train_in_process
from nnconsole.engine.check.project_file import load_valid_project


def _engine_generator(project, parameters: str, z: np.ndarray) -> np.ndarray:
    """The Generator network's g2 by the engine on the trained parameters."""
    import nnabla as nn

    from nnconsole.engine.runtime.graph import build_graph

    nn.clear_parameters()
    nn.load_parameters(parameters)
    graph = build_graph(project.networks["Generator"], len(z), "runtime")
    graph.generated["z"][0].d = z  # z is generated (the template's Normal Input); here it is given
    graph.outputs["g2"].forward()
    points = graph.outputs["g2"].d.copy()
    nn.clear_parameters()
    return points


def _nnp_network(nnp: str, name: str, batch: int):
    import nnabla as nn
    from nnabla.utils.nnp_graph import NnpLoader

    nn.clear_parameters()
    loader = NnpLoader(nnp)
    return loader, loader.get_network(name, batch_size=batch)


def test_the_gan_nnp_has_the_generator_and_nnabla_runs_it_as_the_engine_does(tmp_path):
    path = create_from_template("gan_2d", str(tmp_path / "gan"))
    project = load_valid_project(path)
    project.config.max_epoch = 2
    save_project(project, backup=False)
    run_dir, _ = train_in_process(load_valid_project(path), str(tmp_path / "gan" / "results"))
    nnp = os.path.join(run_dir, "model_final.nnp")
    loader, net = _nnp_network(nnp, "Generator", 7)
    assert loader.get_network_names() == ["runtime", "Generator"]
    assert sorted(net.inputs) == ["z"]  # the target 'one' is not an input of the runtime network
    # the generator's points, not only the discriminator's verdict on them: an output of the Generator's
    # executor (below), a variable of the network (NnpLoader's 'outputs' are only the graph's ends)
    z = np.random.RandomState(3).randn(7, 2).astype(np.float32)
    net.inputs["z"].d = z
    net.outputs["y'"].forward()
    from_nnp = net.variables["g2"].d.copy()
    expected = _engine_generator(project, os.path.join(run_dir, "parameters_final.h5"), z)
    assert from_nnp.shape == (7, 2) and np.allclose(from_nnp, expected, atol=1e-6)
    assert not np.allclose(expected, 0)
    # Main's runtime network is still there, with its executor, and the Generator's executor too
    import zipfile

    from nnabla.utils import nnabla_pb2
    from google.protobuf import text_format

    with zipfile.ZipFile(nnp) as zf:
        proto = text_format.Merge(zf.read("network.nntxt").decode(), nnabla_pb2.NNablaProtoBuf())
    assert [(e.name, e.network_name) for e in proto.executor] == [("runtime", "runtime"), ("Generator", "Generator")]
    assert [v.variable_name for v in proto.executor[1].output_variable] == ["y'", "g2"]


def test_a_one_network_project_writes_the_runtime_network_alone(tmp_path):
    from tests.support.projects import tabular_project

    run_dir, _ = train_in_process(load_valid_project(tabular_project(str(tmp_path))), str(tmp_path / "r"))
    loader, _ = _nnp_network(os.path.join(run_dir, "model_final.nnp"), "runtime", 2)
    assert loader.get_network_names() == ["runtime"]


def test_the_projects_executors_are_in_the_nnp_with_their_evaluations(tmp_path):
    """An executor (Monte-Carlo averaging over 4 evaluations) on the Generator and one on Main are written with
    their settings, on the runtime networks of their networks; nnabla's loader reads them."""
    from nnabla.utils.load import load

    from nnconsole.engine.project.model import Executor
    from tests.support.projects import gan_project

    path = gan_project(str(tmp_path), epochs=1)
    project = load_valid_project(path)
    project.executors = [Executor(name="MC", network="Generator", num_evaluations=4),
                         Executor(name="Last", num_evaluations=2, repeat_evaluation_type="last")]
    save_project(project, backup=False)
    run_dir, _ = train_in_process(load_valid_project(path), str(tmp_path / "r"))
    info = load([os.path.join(run_dir, "model_final.nnp")], prepare_data_iterator=False, batch_size=1)
    assert sorted(info.executors) == ["Generator", "Last", "MC", "runtime"]
    mc, last = info.executors["MC"], info.executors["Last"]
    assert (mc.network.name, mc.num_evaluations, mc.repeat_evaluation_type) == ("Generator", 4, "mean")
    assert (last.network.name, last.num_evaluations, last.repeat_evaluation_type) == ("runtime", 2, "last")
