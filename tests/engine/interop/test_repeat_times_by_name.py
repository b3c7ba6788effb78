"""Issue 26 item 3: a RepeatStart's Times given as the name of an Argument of its network (``Times=n``, Argument
``n`` = 3; NNC's converter writes ``times: 3``), overridden by the Unit running the network (``n=2``)."""
from __future__ import annotations

from tests.support.nnc_checks import check_nnc_project
from tests.support.nnc_files import repeat_by_name_project


def test_repeat_by_name_project_imports_trains_matches_nnabla_and_round_trips(tmp_path):
    project, _, result = check_nnc_project(repeat_by_name_project(tmp_path / "rp"), tmp_path / "work")
    assert project.networks["Stack"].layer("RepeatStart").params["times"] == "n"
    assert "repeat block 'RepeatStart' xn (Affine, Tanh) kept as a block" in " ".join(result.notes)


def test_the_unit_sets_the_count_and_each_repetition_has_its_own_weights(tmp_path):
    from nnconsole.engine.interop.files import import_file
    from nnconsole.engine.network.shapes import infer_network
    from nnconsole.engine.project.structure import all_networks

    project = import_file(repeat_by_name_project(tmp_path / "rp")).project
    networks = all_networks(project)
    block = 16 * 16 + 16
    assert infer_network(project.network, networks, "Main").total_params == 2 * block + 16 * 3 + 3  # n=2
    assert infer_network(project.networks["Stack"], networks, "Stack").total_params == 3 * block  # its own n: 3
    project.network.layer("stack").params["arguments"] = "n=5"
    assert infer_network(project.network, networks, "Main").total_params == 5 * block + 16 * 3 + 3


def test_the_built_graph_names_one_weight_set_per_repetition(tmp_path):
    import nnabla as nn

    from nnconsole.engine.interop.files import import_file
    from nnconsole.engine.project.structure import all_networks
    from nnconsole.engine.runtime.graph import build_graph

    project = import_file(repeat_by_name_project(tmp_path / "rp")).project
    nn.clear_parameters()
    try:
        built = build_graph(project.network, 2, "train", networks=all_networks(project))
        names = sorted(built.parameters)
    finally:
        nn.clear_parameters()
    assert names == ["Affine/affine/W", "Affine/affine/b", "stack/Affine[0]/affine/W", "stack/Affine[0]/affine/b",
                     "stack/Affine[1]/affine/W", "stack/Affine[1]/affine/b"]


def test_a_count_naming_no_argument_is_an_error_naming_it(tmp_path):
    from nnconsole.engine.interop.files import import_file
    from nnconsole.engine.network.shapes import infer_network
    from nnconsole.engine.project.structure import all_networks

    project = import_file(repeat_by_name_project(tmp_path / "rp")).project
    project.networks["Stack"].layer("RepeatStart").params["times"] = "m"
    errors = dict(infer_network(project.networks["Stack"], all_networks(project), "Stack").errors)
    assert errors["RepeatStart"] == ("property times = 'm' names no Argument of network 'Stack' (its Arguments: n); "
                                     "add an Argument layer of that name or give a value")
    project.network.layer("stack").params["arguments"] = "n=0"
    project.networks["Stack"].layer("RepeatStart").params["times"] = "n"
    errors = dict(infer_network(project.network, all_networks(project), "Main").errors)
    assert "times is 0; a block repeats 1 or more times" in errors["stack"]
