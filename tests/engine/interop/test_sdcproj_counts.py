"""Issue 25 item 9: the counts an .sdcproj states (NumNetwork, NumLayer, NumLink, NumProperty, Num, NumOptimizer,
SolverParameterNum) are bounded by what the file holds before anything iterates over them: ``NumProperty=99999999999``
looped 10^11 times, ``NumLayer=inf`` ended in an OverflowError traceback. A count beyond the file (or not a finite
number) is refused naming the file, line, section and key; a property count is read up to the keys the section has
(the same properties the honest count names)."""
from __future__ import annotations

import os
import re
import time

import pytest

from nnconsole.engine.interop.files import import_file
from nnconsole.engine.interop.report import InteropError
from tests.support.timing import budget

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SDCPROJ = os.path.join(ROOT, "tests", "data", "interop", "nnc_tiny_cnn.sdcproj")
TEXT = open(SDCPROJ, encoding="utf-8").read()


def _with(tmp_path, key: str, value: str, first_only: bool = True) -> str:
    text, n = re.subn(rf"^{key}=.*$", f"{key}={value}", TEXT, count=1 if first_only else 0, flags=re.M)
    assert n, key
    path = tmp_path / "bad.sdcproj"
    path.write_text(text, encoding="utf-8")
    return str(path)


HUGE = ["99999999999", "inf", "-inf", "nan", "1e300", "-3", "1e400"]
COUNTS = ["NumNetwork", "NumLayer", "NumLink", "Num", "NumOptimizer"]


@pytest.mark.parametrize("key", COUNTS)
@pytest.mark.parametrize("value", HUGE)
def test_a_count_beyond_the_file_is_refused_naming_the_key(tmp_path, key, value):
    path = _with(tmp_path, key, value)
    start = time.monotonic()
    with pytest.raises(InteropError) as info:
        import_file(path)
    assert time.monotonic() - start < budget(5)
    message = str(info.value)
    assert message.startswith(f"{path}:") and key in message, message


@pytest.mark.parametrize("value", ["99999999999", "1e300", "inf"])
def test_a_huge_property_count_reads_the_properties_the_section_has(tmp_path, value):
    start = time.monotonic()
    try:
        result = import_file(_with(tmp_path, "NumProperty", value, first_only=False))
    except InteropError as exc:  # a located refusal is fine too
        assert "bad.sdcproj" in str(exc)
        return
    assert time.monotonic() - start < budget(5)
    assert [layer.name for layer in result.project.network.layers] == \
        [layer.name for layer in import_file(SDCPROJ).project.network.layers]


def test_a_huge_solver_parameter_count_is_refused(tmp_path):
    text = re.sub(r"^SolverParameterNum=.*$", "SolverParameterNum=99999999999", TEXT, flags=re.M)
    if text == TEXT:
        text = TEXT.replace("[Optimizer_0]\n", "[Optimizer_0]\nSolverParameterNum=99999999999\n", 1)
    path = tmp_path / "bad.sdcproj"
    path.write_text(text, encoding="utf-8")
    start = time.monotonic()
    with pytest.raises(InteropError, match="SolverParameterNum"):
        import_file(str(path))
    assert time.monotonic() - start < budget(5)


def test_an_interval_of_inf_is_not_a_traceback(tmp_path):
    from nnconsole.engine.layers.nnc_values import as_int
    assert as_int("inf", 7) == 7 and as_int("-inf", 7) == 7 and as_int("nan", 7) == 7


def test_the_cli_refuses_in_one_line(tmp_path):
    from tests.support.cli import nnconsole
    path = _with(tmp_path, "NumLayer", "inf")
    out = nnconsole(["import", path, "-o", str(tmp_path / "out.yaml")], check=False)
    assert out.returncode == 2 and "Traceback" not in out.stderr and "NumLayer" in out.stderr, out.stderr
    assert not (tmp_path / "out.yaml").exists()
