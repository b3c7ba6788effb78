"""Issue 26 item 1: a Unit sets its network's layers' parameter properties (``Convolution.W.LRateMultiplier``,
``Convolution.W.InitializerMultiplier``, ``Affine.W.Initializer``, ``Convolution.b.File``), NNC's VGG-style
samples. The project file is written in NNC's format (tests/support/nnc_files.vgg_like_project)."""
from __future__ import annotations

import numpy as np
from tests.support.nnc_checks import check_nnc_project
from tests.support.nnc_files import vgg_like_project
from tests.support.training import final_params, load_h5, train_in_process


def test_vgg_like_project_imports_trains_matches_nnabla_and_round_trips(tmp_path):
    project, _, result = check_nnc_project(vgg_like_project(tmp_path / "vgg"), tmp_path / "work")
    assert project.network.layer("conv2").params["arguments"] == \
        "Maps=4; Convolution.W.LRateMultiplier=0; Convolution.b.File=pretrained/conv2_b.h5"
    assert result.unsupported == ["unit 'conv2': argument Convolution.b.File=pretrained/conv2_b.h5 (weights read "
                                  "from a file) is kept in the project but not loaded; the weight starts from its "
                                  "initializer"]


def test_the_arguments_reach_the_expanded_layers(tmp_path):
    from nnconsole.engine.interop.files import import_file
    from nnconsole.engine.network.units import expanded_project

    project = import_file(vgg_like_project(tmp_path / "vgg")).project
    layers = {x.name: x for x in expanded_project(project).network.layers}
    assert layers["conv1/Convolution"].params["outmaps"] == 4 and layers["conv1/Convolution"].params["pad"] == [1, 1]
    assert layers["conv1/Convolution"].initializers["W"].multiplier == 2.0
    assert layers["conv1/Convolution"].lr_multipliers == {}
    assert layers["conv2/Convolution"].lr_multipliers == {"W": 0.0}
    assert layers["conv2/Convolution"].initializers["W"].multiplier == 1.0
    assert layers["head/Affine"].lr_multipliers == {"W": 0.5}
    assert layers["head/Affine"].initializers["W"].type == "NormalAffineHe"


def test_a_zero_learning_rate_argument_leaves_that_weight_unchanged(tmp_path):
    """conv2's ``Convolution.W.LRateMultiplier=0``: after an epoch its W is the initial one, its b and conv1's W
    moved; the ``InitializerMultiplier=2`` argument doubles conv1's initial spread."""
    import nnabla as nn

    from nnconsole.engine.check.project_file import load_valid_project
    from nnconsole.engine.interop.files import import_to_project
    from nnconsole.engine.project.io import save_project
    from nnconsole.engine.project.structure import all_networks
    from nnconsole.engine.runtime.graph import build_graph

    source = vgg_like_project(tmp_path / "vgg")
    path = str(tmp_path / "vgg" / "project.yaml")
    import_to_project(source, path)
    project = load_valid_project(path)
    nn.clear_parameters()
    try:
        built = build_graph(project.network, 2, "train", networks=all_networks(project),
                            rng=np.random.RandomState(0))
        nn.save_parameters(str(tmp_path / "vgg" / "init.h5"), params=built.parameters, extension=".h5")
    finally:
        nn.clear_parameters()
    project.config.initial_parameters = "init.h5"
    save_project(project, path, backup=False)
    start = load_h5(str(tmp_path / "vgg" / "init.h5"))
    run_dir, losses = train_in_process(load_valid_project(path), str(tmp_path / "results"))
    end = final_params(run_dir)
    assert np.array_equal(end["conv2/Convolution/conv/W"], start["conv2/Convolution/conv/W"])
    assert not np.allclose(end["conv2/Convolution/conv/b"], start["conv2/Convolution/conv/b"])
    assert not np.allclose(end["conv1/Convolution/conv/W"], start["conv1/Convolution/conv/W"])
    # Glorot std for 1 -> 4 maps, 3x3: sqrt(2 / (9 * 5)) = 0.21; conv1's is doubled by its argument
    assert 0.3 < float(np.std(start["conv1/Convolution/conv/W"])) < 0.6


def test_a_parameter_argument_naming_no_layer_or_a_bad_value_is_an_error_on_the_unit(tmp_path):
    from nnconsole.engine.interop.files import import_file
    from nnconsole.engine.network.shapes import infer_network
    from nnconsole.engine.project.structure import all_networks

    project = import_file(vgg_like_project(tmp_path / "vgg")).project
    for arguments, needle in (("Maps=4; Conv.W.LRateMultiplier=0", "argument 'Conv.W.LRateMultiplier' is not an "
                               "Argument of the network (it has: Maps, Convolution.W.File; or a parameter property "
                               "such as 'Convolution.W.LRateMultiplier')"),
                              ("Maps=4; Convolution.W.LRateMultiplier=-1", "W.LRateMultiplier -1.0 is negative"),
                              ("Maps=4; Convolution.W.Initializer=Magic", "W.Initializer 'Magic' is not an "
                               "initializer nnconsole has")):
        project.network.layer("conv2").params["arguments"] = arguments
        errors = dict(infer_network(project.network, all_networks(project), "Main").errors)
        assert needle in errors["conv2"], errors
