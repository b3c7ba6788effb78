"""Issue 25 item 24: a YAML tag whose constructor fails (``batch_size: !!timestamp "x"``, ``!!int "x"``,
``!!binary "%"`` ...) is a located problem of the project file, never a traceback: whatever PyYAML's
constructor raises (ValueError, KeyError, or an AttributeError from inside PyYAML) becomes a YAML error with
the line."""
from __future__ import annotations

import os
import re

import pytest

from nnconsole.engine.check.project_file import loads_valid_project
from nnconsole.engine.project.errors import ProjectError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TEMPLATE = open(os.path.join(ROOT, "project_templates", "iris_mlp", "project.yaml"), encoding="utf-8").read()
LINE = TEMPLATE[:re.search(r"^  batch_size:", TEMPLATE, re.M).start()].count("\n") + 1


def _with_batch_size(value: str) -> str:
    return re.sub(r"^(  batch_size:).*$", lambda m: f"{m.group(1)} {value}", TEMPLATE, count=1, flags=re.M)

TAGS_THAT_FAIL = ['!!timestamp "x"', "!!timestamp 2020-13-45", '!!int "x"', '!!float "abc"', '!!bool "perhaps"',
                  "!!timestamp ''", "!!int 0x", '!!timestamp "2020-01-01T25:61:61"']


@pytest.mark.parametrize("value", TAGS_THAT_FAIL)
def test_a_tag_that_cannot_be_built_is_a_located_problem(value):
    with pytest.raises(ProjectError) as info:
        loads_valid_project(_with_batch_size(value), file="p.yaml", check_datasets=False)
    errors = [p for p in info.value.problems if p.severity == "error"]
    assert errors, value
    assert any(p.line == LINE for p in errors), [str(p) for p in errors]
    assert all("NoneType" not in str(p) and "groupdict" not in str(p) for p in errors), [str(p) for p in errors]


def test_validate_says_it_in_one_line_and_exits_2(tmp_path):
    from tests.support.cli import nnconsole
    path = tmp_path / "project.yaml"
    path.write_text(_with_batch_size('!!timestamp "x"'))
    result = nnconsole(["validate", str(path)], check=False)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and f"{path}:{LINE}" in result.stdout + result.stderr
