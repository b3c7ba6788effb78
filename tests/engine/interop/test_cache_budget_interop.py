"""``datasets.cache_budget`` (issue 31) through the file formats: an exported .nntxt (and an .nnp holding it) keeps it
in the nnconsole settings comment, which nnabla's own reader ignores; a file nnabla or NNC wrote (no comment, or a
comment from before the setting) gives the default, automatic budget; a hand-edited value that is not a budget
refuses the import naming the file and line, the setting and the fix; NNC's .sdcproj has no place for it and the
export says so."""
from __future__ import annotations

import json
import os
import re
import zipfile

import pytest

from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.interop.files import import_file
from nnconsole.engine.interop.nntxt.exporter import export_nntxt
from nnconsole.engine.interop.nntxt.reader import EXTRAS_PREFIX
from nnconsole.engine.interop.report import InteropError
from nnconsole.engine.interop.sdcproj.exporter import export_sdcproj
from nnconsole.engine.project.model import Datasets
from tests.support.paths import INTEROP_DATA, TEMPLATES

DIGITS = os.path.join(TEMPLATES, "digits_cnn", "project.yaml")
DEFAULT = Datasets().cache_budget


def _digits(budget: float):
    project = load_valid_project(DIGITS, check_datasets=False)
    project.datasets.cache_budget = budget
    return project


def _comment(path) -> dict:
    line = next(l for l in open(path, encoding="utf-8") if l.startswith(EXTRAS_PREFIX))
    return json.loads(line[len(EXTRAS_PREFIX):])


def _with_budget_text(path, text: str) -> None:
    """Replace the comment's cache_budget value by ``text`` (raw JSON), as a person editing the file would."""
    content = open(path, encoding="utf-8").read()
    edited, count = re.subn(r'"cache_budget":[^,}]*', f'"cache_budget":{text}', content, count=1)
    assert count == 1
    open(path, "w", encoding="utf-8").write(edited)


@pytest.mark.parametrize("budget", [2.5, 0.001, 1500.0, 0.0])
def test_an_nntxt_round_trip_keeps_the_budget(tmp_path, budget):
    out = tmp_path / "digits.nntxt"
    export_nntxt(_digits(budget), str(out))
    assert _comment(out)["datasets"]["cache_budget"] == budget
    back = import_file(str(out))
    assert back.project.datasets.cache_budget == budget
    assert not any("cache_budget" in item for item in back.unsupported + back.notes)


def test_nnablas_reader_still_reads_the_export_and_an_nnp_holding_it_keeps_the_budget(tmp_path):
    from nnabla.utils import load  # deferred: nnabla's own reader, the one nnabla_cli uses

    out = tmp_path / "digits.nntxt"
    export_nntxt(_digits(7.25), str(out))
    info = load.load([str(out)], prepare_data_iterator=False, exclude_parameter=True)
    assert set(info.networks) == {"Main", "MainValidation", "MainRuntime"}
    assert set(info.datasets) == {"Training", "Validation"}
    nnp = tmp_path / "digits.nnp"  # an .nnp as NNC packs one: the .nntxt and (here no) parameters
    with zipfile.ZipFile(nnp, "w") as z:
        z.write(out, "network.nntxt")
    assert import_file(str(nnp)).project.datasets.cache_budget == 7.25


def test_files_without_the_setting_get_the_automatic_default(tmp_path):
    nnc = import_file(os.path.join(INTEROP_DATA, "nnc_tiny_repeat.nntxt"))  # NNC's own export: no comment
    assert nnc.project.datasets.cache_budget == DEFAULT == 0.0
    plain = tmp_path / "plain.nntxt"  # what nnabla's tools see: our export without the comment
    export_nntxt(_digits(3.0), str(plain), with_extras=False)
    assert import_file(str(plain)).project.datasets.cache_budget == DEFAULT
    older = tmp_path / "older.nntxt"  # an export from before the setting: the comment lacks it
    export_nntxt(_digits(3.0), str(older))
    content = open(older, encoding="utf-8").read()
    open(older, "w", encoding="utf-8").write(re.sub(r',"cache_budget":[^,}]*', "", content, count=1))
    assert "cache_budget" not in _comment(older)["datasets"]
    back = import_file(str(older)).project
    assert back.datasets.cache_budget == DEFAULT and back.datasets.cache is True


@pytest.mark.parametrize("raw, says", [
    ('"abc"', "expected a number, got 'abc'"),
    ("-1", "must be >= 0"),
    ("NaN", "must be a finite number"),
    ("1e400", "must be a finite number"),  # json reads it as infinity
    ("1e20", "must be <= 2,147,483,647"),
    ("true", "expected a number, got True"),
    ("[1]", "expected a number, got [1]"),
    ("null", "expected a number, got None"),
])
def test_a_hand_edited_budget_that_is_not_one_is_refused_naming_file_line_setting_and_fix(tmp_path, raw, says):
    out = tmp_path / "edited.nntxt"
    export_nntxt(_digits(1.0), str(out))
    _with_budget_text(out, raw)
    before = out.read_bytes()
    with pytest.raises(InteropError) as caught:
        import_file(str(out))
    message = str(caught.value)
    assert message.startswith(f"{out}:1: '{EXTRAS_PREFIX}' comment, datasets.cache_budget (Cache disk budget (GB)): ")
    assert says in message
    assert "fix: write a number >= 0, <= 2,147,483,647 (0 lets nnconsole decide from the free space), " in message
    assert 'delete "cache_budget" from the comment\'s "datasets"' in message
    assert "\n" not in message
    assert out.read_bytes() == before  # the user's file is left as it was


def test_the_cache_flag_beside_it_is_checked_the_same_way(tmp_path):
    """Both settings the comment carries come from the schema (``Setting.nntxt``); before, ``"cache": "no"`` was
    read as bool("no"), True: the cache on, the opposite of what the text says."""
    out = tmp_path / "flag.nntxt"
    project = _digits(1.0)
    project.datasets.cache = False
    export_nntxt(project, str(out))
    assert _comment(out)["datasets"] == {"cache": False, "cache_budget": 1.0}
    assert import_file(str(out)).project.datasets.cache is False
    content = open(out, encoding="utf-8").read()
    open(out, "w", encoding="utf-8").write(content.replace('"cache":false', '"cache":"no"', 1))
    with pytest.raises(InteropError, match=r"datasets\.cache \(Cache decoded images\): expected true or false, "
                                           r"got 'no'; fix: write true or false, or delete \"cache\""):
        import_file(str(out))


def test_sdcproj_export_names_the_budget_it_cannot_hold_and_import_gives_the_default(tmp_path):
    project = _digits(4.0)
    out = os.path.join(os.path.dirname(DIGITS), f".{tmp_path.name}.sdcproj")  # beside the data, as NNC keeps it
    try:
        result = export_sdcproj(project, out)
        assert [u for u in result.unsupported if "cache_budget" in u] == [
            "datasets.cache_budget=4: NNC's project file has no such setting (importing the .sdcproj gives the "
            "automatic budget, 80% of the cache folder's free space)"]
        assert import_file(out).project.datasets.cache_budget == DEFAULT
        default = export_sdcproj(_digits(DEFAULT), out)  # the default is NNC's behaviour: nothing to report
        assert not any("cache_budget" in u for u in default.unsupported)
    finally:
        os.unlink(out)
