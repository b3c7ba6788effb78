"""Issue 26 item 2: NNC's macro references ``*Name`` naming an Argument of the enclosing unit network, in Boolean
(``BatchStat=*ConvBS``), array (``KernelShape=*ConvKernel``, its padding computed by NNC) and Unit-argument
(``NetworkBS=*ConvBS``) properties: NNC's ResNeXt-style samples (tests/support/nnc_files.resnext_like_project)."""
from __future__ import annotations

from tests.support.nnc_checks import check_nnc_project
from tests.support.nnc_files import resnext_like_project


def test_resnext_like_project_imports_trains_matches_nnabla_and_round_trips(tmp_path):
    project, _, result = check_nnc_project(resnext_like_project(tmp_path / "rx"), tmp_path / "work")
    assert result.unsupported == []
    block = {x.name: x for x in project.networks["ResBlock"].layers}
    assert block["Convolution"].params["kernel"] == "*ConvKernel" and block["Convolution"].params["pad"] == "same"
    assert block["BatchNormalization"].params["batch_stat"] == "*ConvBS"
    assert block["bn_unit"].params["arguments"] == "NetworkBS=*ConvBS"


def test_macros_take_each_units_values(tmp_path):
    """res1 runs ResBlock with ConvBS=True and kernel 1,1 (pad 0), res2 with ConvBS=False and kernel 3,3 (pad 1);
    ConvBS reaches the inner unit's BatchNormalization through ``NetworkBS=*ConvBS``."""
    from nnconsole.engine.interop.files import import_file
    from nnconsole.engine.network.units import expanded_project

    project = import_file(resnext_like_project(tmp_path / "rx")).project
    layers = {x.name: x.params for x in expanded_project(project).network.layers}
    assert (layers["res1/Convolution"]["kernel"], layers["res1/Convolution"]["pad"]) == ([1, 1], [0, 0])
    assert (layers["res2/Convolution"]["kernel"], layers["res2/Convolution"]["pad"]) == ([3, 3], [1, 1])
    assert layers["res1/BatchNormalization"]["batch_stat"] is True
    assert layers["res2/BatchNormalization"]["batch_stat"] is False
    assert layers["res1/bn_unit/BatchNormalization"]["batch_stat"] is True
    assert layers["res2/bn_unit/BatchNormalization"]["batch_stat"] is False


def test_an_unknown_macro_is_an_error_naming_network_layer_property_and_arguments(tmp_path):
    from nnconsole.engine.interop.files import import_file
    from nnconsole.engine.network.shapes import infer_network
    from nnconsole.engine.project.structure import all_networks

    project = import_file(resnext_like_project(tmp_path / "rx")).project
    project.networks["ResBlock"].layer("BatchNormalization").params["batch_stat"] = "*ConvBN"
    networks = all_networks(project)
    own = dict(infer_network(project.networks["ResBlock"], networks, "ResBlock").errors)
    assert own["BatchNormalization"] == ("property batch_stat = '*ConvBN' names no Argument of network 'ResBlock' "
                                         "(its Arguments: ConvBS, ConvKernel); add an Argument layer of that name or "
                                         "give a value")
    main = dict(infer_network(project.network, networks, "Main").errors)
    assert main["res1"].startswith("in network 'ResBlock', layer 'BatchNormalization': property batch_stat = "
                                   "'*ConvBN' names no Argument of network 'ResBlock'")


def test_a_macro_in_a_network_without_arguments_or_a_units_argument_is_named(tmp_path):
    from nnconsole.engine.interop.files import import_file
    from nnconsole.engine.network.shapes import infer_network
    from nnconsole.engine.project.structure import all_networks

    project = import_file(resnext_like_project(tmp_path / "rx")).project
    project.network.layer("stem").params["kernel"] = "*Kernel"
    project.networks["ResBlock"].layer("bn_unit").params["arguments"] = "NetworkBS=*Missing"
    networks = all_networks(project)
    main = dict(infer_network(project.network, networks, "Main").errors)
    assert main["stem"] == ("property kernel = '*Kernel' names no Argument of network 'Main' (its Arguments: none); "
                            "add an Argument layer of that name or give a value")
    block = dict(infer_network(project.networks["ResBlock"], networks, "ResBlock").errors)
    assert block["bn_unit"].startswith("property arguments (NetworkBS) = '*Missing' names no Argument of network "
                                     "'ResBlock' (its Arguments: ConvBS, ConvKernel)")


def test_the_sample_that_ended_in_a_traceback_imports(tmp_path):
    """``KernelShape=*ConvKernel`` with ``Padding=*ConvolutionPaddingSize``: 'could not convert string to float'."""
    from nnconsole.engine.interop.files import import_file

    result = import_file(resnext_like_project(tmp_path / "rx"))
    assert result.unsupported == []
