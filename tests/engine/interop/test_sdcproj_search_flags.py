"""NNC's per-argument Search flag (issue 29): an Argument's ``Search=True`` (layer_component/Unit/Argument.txt:
Value, Type, Search) imports as its value searched, with a range made from the value since NNC keeps none; the
flags and ranges round-trip through the project YAML, and export writes the flag back (ranges and flags NNC has
no place for are named, never dropped silently)."""
from __future__ import annotations

import re

from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.check.search import check_search
from nnconsole.engine.interop.sdcproj.exporter import export_sdcproj
from nnconsole.engine.interop.sdcproj.importer import import_sdcproj
from nnconsole.engine.interop.sdcproj.reader import SdcReader, layer_properties, parse_ini
from nnconsole.engine.project.io import load_project, save_project
from nnconsole.engine.project.model import SearchRange
from nnconsole.engine.project.searched_properties import flagged_properties, searched_params
from tests.support.nnc_files import searched_argument_project, vgg_like_project


def _argument_props(path: str, network: str = "Main", name: str = "Units") -> dict:
    reader = SdcReader(path, parse_ini(open(path, encoding="utf-8").read()))
    for section in reader.sections.values():
        if section.name.startswith(f"{network}_Layer_"):
            props = layer_properties(section)
            if props.get("Name") == name:
                return props
    raise AssertionError(f"no layer {name} in {path}")


def test_an_argument_marked_search_has_its_value_searched_over_a_range_from_it(tmp_path):
    result = import_sdcproj(searched_argument_project(tmp_path / "nnc", value="8"))
    units = result.project.network.layer("Units")
    assert units.params["search"] is True
    assert units.search == {"value": SearchRange(kind="int", low=2, high=16)}  # x1/4 .. x2 of 8
    assert [p.target for p in searched_params(result.project)] == ["layers.Units.value"]
    assert any("Argument 'Units'" in n and "2..16" in n for n in result.notes)


def test_an_argument_not_marked_search_is_not_searched(tmp_path):
    result = import_sdcproj(searched_argument_project(tmp_path / "nnc", search="False"))
    assert result.project.network.layer("Units").search == {} and flagged_properties(result.project) == []


def test_a_boolean_argument_is_searched_both_ways_and_a_text_one_is_named(tmp_path):
    boolean = import_sdcproj(searched_argument_project(tmp_path / "b", value="True", arg_type="Boolean"))
    assert boolean.project.network.layer("Units").search["value"] == SearchRange(kind="choice", choices=[True, False])
    text = import_sdcproj(searched_argument_project(tmp_path / "t", value="abc", arg_type="Text"))
    assert text.project.network.layer("Units").search == {}
    assert any("Argument 'Units' is marked Search but its value gives no range" in n for n in text.notes)


def test_flags_and_ranges_round_trip_through_the_project_file(tmp_path):
    project = import_sdcproj(searched_argument_project(tmp_path / "nnc")).project
    project.network.layer("Units").search["value"] = SearchRange(kind="choice", choices=[4, 8, 32])
    path = save_project(project, str(tmp_path / "nnc" / "project.yaml"))
    again = load_project(path)
    assert again.network.layer("Units").search == {"value": SearchRange(kind="choice", choices=[4, 8, 32])}
    assert load_valid_project(path).network.layer("Units").search == again.network.layer("Units").search
    text = open(path, encoding="utf-8").read()
    assert "search:" in text and "choices: [4, 8, 32]" in text
    again.network.layer("Units").search["value"].choices = [4, 8]  # a later save changes only that line
    save_project(again, path)
    after = open(path, encoding="utf-8").read()
    assert after.replace("choices: [4, 8]", "choices: [4, 8, 32]") == text
    assert "search:" not in open(path, encoding="utf-8").read().split("name: x", 1)[1].split("name: Units")[0]


def test_the_flag_is_exported_back_and_what_nnc_cannot_hold_is_named(tmp_path):
    project = import_sdcproj(searched_argument_project(tmp_path / "nnc")).project
    project.network.layer("Affine").search["out_shape"] = SearchRange(kind="int", low=2, high=6)
    out = tmp_path / "out" / "back.sdcproj"
    out.parent.mkdir()
    result = export_sdcproj(project, str(out))
    assert _argument_props(str(out))["Search"] == "True"
    assert any("layer 'Affine': property out_shape is marked searched (int 2..6)" in u for u in result.unsupported)
    assert not any("Argument 'Units'" in u for u in result.unsupported)  # the range NNC's import makes: no loss
    back = import_sdcproj(str(out)).project
    assert back.network.layer("Units").search == project.network.layer("Units").search
    project.network.layer("Units").search["value"] = SearchRange(kind="int", low=4, high=12, step=4)
    result = export_sdcproj(project, str(out))
    assert any("Argument 'Units': its search range (int 4..12)" in u for u in result.unsupported)
    project.network.layer("Units").search.clear()
    project.network.layer("Units").params["search"] = False
    export_sdcproj(project, str(out))
    assert _argument_props(str(out))["Search"] == "False"


def test_an_argument_of_a_unit_network_is_a_target_of_that_network(tmp_path):
    path = vgg_like_project(tmp_path / "vgg")
    text = re.sub(r"(Name=Search\r?\nProperty_\d+_Value=)False", r"\1True", open(path, encoding="utf-8").read(),
                  count=1)  # ConvBlock's Argument Maps (value 8)
    open(path, "w", encoding="utf-8").write(text)
    project = import_sdcproj(path).project
    flags = flagged_properties(project)
    assert [(f.target, f.path.split(".search")[0]) for f in flags] == [
        ("networks.ConvBlock.layers.Maps.value", f"networks.ConvBlock.layers[{_index(project, 'Maps')}]")]
    assert flags[0].param.low == 2 and flags[0].param.high == 16
    [problem] = check_search(project)  # both units give Maps=4: the Argument's own value is never used
    assert problem.path == flags[0].path and "every Unit running network ConvBlock (conv1, conv2)" in problem.message
    unit = project.network.layer("conv2")
    unit.params["arguments"] = "; ".join(a for a in unit.params["arguments"].split("; ") if not a.startswith("Maps="))
    assert check_search(project) == []  # conv2 now takes the searched value


def test_an_argument_marked_search_whose_value_gives_no_range_is_named(tmp_path):
    project = import_sdcproj(searched_argument_project(tmp_path / "nnc", value="abc", arg_type="Text")).project
    [problem] = check_search(project)
    assert problem.path == "network.layers[1].params.search" and "gives no range" in problem.message


def _index(project, name: str) -> int:
    return [layer.name for layer in project.networks["ConvBlock"].layers].index(name)
