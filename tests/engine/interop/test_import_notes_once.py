"""An import report says each thing once (issue 28, item 9): an NNC project whose two networks both hold a
repeat block and shared weights used to list every repeat-block and shared-weight note twice, without
saying which network it was about."""
from __future__ import annotations

from nnconsole.engine.interop.files import import_file
from nnconsole.engine.interop.report import ImportResult, format_report
from nnconsole.engine.project.model import Project
from tests.support.nnc_files import repeat_and_shared_layers, sdcproj_text, sdcproj_two_networks_text


def _import(tmp_path, text: str) -> ImportResult:
    path = tmp_path / "project.sdcproj"
    path.write_text(text)
    return import_file(str(path))


def _once(items):
    return [item for item in set(items) if items.count(item) > 1]


def test_two_networks_with_a_repeat_block_and_shared_weights_note_each_once(tmp_path):
    result = _import(tmp_path, sdcproj_two_networks_text(repeat_and_shared_layers()))
    assert _once(result.notes) == [] and _once(result.unsupported) == []
    repeat = [n for n in result.notes if "repeat block 'RepeatStart'" in n]
    shared = [n for n in result.notes if "share parameter scope" in n]
    # one note per network, the second network's naming it
    assert len(repeat) == 2 and len(shared) == 2
    assert sum(n.startswith("network 'Second': ") for n in repeat + shared) == 2
    lines = result.report().splitlines()
    assert _once(lines) == [], result.report()
    assert set(result.project.networks) == {"Second"}


def test_one_network_notes_once_and_unnamed(tmp_path):
    result = _import(tmp_path, sdcproj_text(repeat_and_shared_layers()))
    repeat = [n for n in result.notes if "repeat block 'RepeatStart'" in n]
    shared = [n for n in result.notes if "share parameter scope" in n]
    assert len(repeat) == 1 and len(shared) == 1 and not repeat[0].startswith("network ")


def test_the_report_collects_each_entry_once_in_order():
    result = ImportResult(project=Project(), unsupported=["a", "b", "a"], notes=["n", "m", "n", "m"], source="f")
    assert (result.unsupported, result.notes) == (["a", "b"], ["n", "m"])
    assert format_report("head", ["x", "x"], ["y", "y", "z"]).splitlines() == [
        "head", "not carried over (1):", "  - x", "notes:", "  - y", "  - z"]
