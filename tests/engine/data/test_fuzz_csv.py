"""Bad dataset CSVs: random cells and row lengths, bad encodings, missing or broken images.

Every case must end in DatasetError whose message starts with the CSV path (and names the line
when one is at fault), never in another exception or a hang; ``check_dataset`` (used by
``nnconsole validate`` and ``train`` before any worker starts) must agree with ``load_dataset``
on everything that needs no image decoding.
"""
from __future__ import annotations

import os
import re
import shutil
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from nnconsole.engine.data.loading import DatasetError, check_dataset, load_dataset, peek_csv
from nnconsole.engine.project.errors import ProjectError
from tests.support.cli import nnconsole
from tests.support.paths import ROOT
from nnconsole.engine.check.project_file import load_valid_project
from tests.support.timing import budget

FUZZ = settings(max_examples=200, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A folder with good, broken and odd image files that CSV cells can point at."""
    d = tmp_path_factory.mktemp("ds")
    (d / "img").mkdir()
    Image.fromarray(np.zeros((4, 4), np.uint8)).save(d / "img" / "grey.png")
    Image.fromarray(np.zeros((5, 4, 3), np.uint8)).save(d / "img" / "colour.png")
    (d / "img" / "garbage.png").write_bytes(b"\x89PNG\r\n\x1a\nnot really")
    (d / "img" / "empty.png").write_bytes(b"")
    (d / "img" / "truncated.png").write_bytes((d / "img" / "grey.png").read_bytes()[:40])
    (d / "img" / "folder.png").mkdir()
    os.mkfifo(d / "img" / "fifo.png")  # decoding it would block forever
    return d


CELLS = ["0", "1", "-1.5", "2e-3", "1e400", "nan", "inf", "", " ", "abc", "img/grey.png", "img/colour.png",
         "img/garbage.png", "img/missing.png", "img/empty.png", "img/truncated.png", "img/folder.png", "img/fifo.png",
         "../../../etc/passwd.png", "img\\grey.png", '"1,2"', '"', "x:image", "x__0", "x__1", "y", "x__0__0",
         "x__1__1", "x__99999999999", "\u00e9", "\x00", "y:label"]
EXPECTED = [None, {"x": (1, 4, 4)}, {"x": (4, 4)}, {"x": (3, 4, 4)}, {"x": (2,)}, {"y": (1,)}, {"x": (2, 2)},
            {"z": (1,)}, {"x": (7, 4, 4)}]
X_FORMS = [["x"], ["x:image"], ["x__0", "x__1"], ["x__0__0", "x__0__1", "x__1__0", "x__1__1"], ["x__0", "x__2"],
           ["x__1__1"]]
_DATA_CELLS = ["0", "1", "2", "-1.5", "2e-3", "img/grey.png", "img/colour.png"]


@st.composite
def _rows(draw):
    """A header that mostly looks like one, then rows that mostly have its length and sane cells."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.lists(st.lists(st.sampled_from(CELLS), max_size=4), max_size=5))
    header = list(draw(st.sampled_from(X_FORMS)))
    header += [name for name in ("y:label", "z") if draw(st.booleans())]
    rows = [header]
    for _ in range(draw(st.integers(0, 4))):
        width = len(header) if draw(st.integers(0, 5)) else draw(st.integers(0, 5))
        column = st.sampled_from(_DATA_CELLS if draw(st.integers(0, 2)) else CELLS)
        rows.append(draw(st.lists(column, min_size=width, max_size=width)))
    return rows


def _encode(rows, encoding: str, cut: float) -> bytes:
    text = "\n".join(",".join(row) for row in rows)
    if encoding == "utf-8":
        raw = text.encode("utf-8")
    elif encoding == "latin-1":
        raw = text.encode("latin-1", errors="replace")
    elif encoding == "utf-16":
        raw = text.encode("utf-16")
    else:  # utf-8 with a byte-order mark, as spreadsheets write it
        raw = b"\xef\xbb\xbf" + text.encode("utf-8")
    return raw[: int(len(raw) * cut)] if cut < 1 else raw + b"\n"


def assert_dataset_error(error: DatasetError, path: str) -> None:
    message = str(error)
    assert message.startswith(path), message
    assert error.path == path
    if error.line is not None:
        assert f"{path} line {error.line}" in message


@FUZZ
@given(_rows(), st.sampled_from(["utf-8", "utf-8", "utf-8", "latin-1", "utf-16", "bom"]),
       st.sampled_from([1.0, 1.0, 1.0, 0.5, 0.9]),
       st.sampled_from(EXPECTED))
@pytest.mark.slow
def test_random_csvs_give_dataset_errors_that_say_where(folder, rows, encoding, cut, expected):
    path = str(folder / "random.csv")
    with open(path, "wb") as fh:
        fh.write(_encode(rows, encoding, cut))
    outcomes = []
    for read in (lambda: peek_csv(path), lambda: check_dataset(path, expected),
                 lambda: load_dataset(path, expected, cache=False)):
        start = time.monotonic()
        try:
            read()
            outcomes.append(None)
        except DatasetError as exc:
            assert_dataset_error(exc, path)
            outcomes.append(str(exc))
        assert time.monotonic() - start < budget(5)
    # check_dataset finds every problem load_dataset finds, except a file that only fails to decode.
    peeked, checked, loaded = outcomes
    if checked is not None:
        assert loaded == checked
    elif loaded is not None:
        assert "cannot decode image file" in loaded or "(HxW)" in loaded, loaded
    if peeked is not None:
        assert checked == peeked


@pytest.mark.parametrize("raw,line,words", [
    ("x__0,y\n1,0\n2,\xe9\n".encode("latin-1"), 3, "not valid UTF-8"),
    ("x__0,y\n1,0\n".encode("utf-16"), 1, "not valid UTF-8"),
    (b"x__0,y\n1,0\n2,\x00\n", 3, "contains a NUL byte"),
    (b"x__0,y\n1,0\n2\n", 3, "the row has 1 values but the header names 2"),
    (b"x__0,y\n1,0\n2,0,5\n", 3, "the row has 3 values"),
    (b"x__0,y\n1,0\n\"2,0\n", 3, "malformed CSV"),
    (b"x__0,y\n1,0\n2,1e999\n", 3, "not a finite number"),
    (b"x:image,y\nimg/grey.png,0\nimg/missing.png,1\n", 3, "image file 'img/missing.png' not found"),
    (b"x:image,y\nimg/grey.png,0\nimg/folder.png,1\n", 3, "is not a regular file"),
    (b"x:image,y\nimg/grey.png,0\nimg/fifo.png,1\n", 3, "is not a regular file"),
    (b"x:image,y\nimg/grey.png,0\n,1\n", 3, "empty cell"),
    (b"x__0,x__99999999999,y\n1,2,0\n", 1, "column 'x__1' is missing"),
    (b"1,2,3\n4,5,6\n", 1, "looks like data, not a header"),
    (b"", 1, "the CSV is empty"),
    (b"x__0,y\n", 2, "no data rows"),
])
def test_each_kind_of_bad_csv_names_its_line(folder, raw, line, words):
    path = str(folder / "bad.csv")
    with open(path, "wb") as fh:
        fh.write(raw)
    for read in (check_dataset, lambda p: load_dataset(p, cache=False)):
        with pytest.raises(DatasetError) as info:
            read(path)
        assert_dataset_error(info.value, path)
        assert info.value.line == line and words in str(info.value), str(info.value)


def test_broken_image_files_are_reported_when_decoded(folder):
    path = str(folder / "images.csv")
    for name in ("garbage.png", "empty.png", "truncated.png"):
        with open(path, "w") as fh:
            fh.write(f"x:image,y\nimg/grey.png,0\nimg/{name},1\n")
        check_dataset(path, {"x": (1, 4, 4)})  # the file is there; only decoding can tell
        with pytest.raises(DatasetError) as info:
            load_dataset(path, {"x": (1, 4, 4)}, cache=False)
        assert_dataset_error(info.value, path)
        assert info.value.line == 3 and f"cannot decode image file 'img/{name}'" in str(info.value)


@pytest.mark.slow
def test_a_bad_dataset_reaches_the_user_through_validate_and_train(tmp_path):
    project = tmp_path / "digits"
    shutil.copytree(os.path.join(ROOT, "project_templates", "digits_cnn"), project,
                    ignore=shutil.ignore_patterns(".nnconsole-cache", "results"))
    csv = project / "data" / "train.csv"
    lines = csv.read_text().splitlines()
    lines[7] = "images/does-not-exist.png,3"
    csv.write_text("\n".join(lines) + "\n")
    with pytest.raises(ProjectError) as info:
        load_valid_project(str(project / "project.yaml"))
    [problem] = info.value.problems
    assert problem.path == "datasets.training" and problem.line is not None
    assert f"{csv} line 8, column x: image file 'images/does-not-exist.png' not found" in problem.message
    before = (project / "project.yaml").read_bytes()
    for command in (["validate"], ["train", "-q"]):
        out = nnconsole(command[:1] + [str(project / "project.yaml")] + command[1:], check=False, timeout=60)
        assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
        assert re.search(r"project\.yaml:\d+: datasets\.training: .*train\.csv line 8", out.stderr), out.stderr
    assert (project / "project.yaml").read_bytes() == before
    assert not (project / "results").exists()


def test_image_cells_of_a_project_dataset_stay_inside_the_project_folder(tmp_path):
    project = tmp_path / "digits"
    shutil.copytree(os.path.join(ROOT, "project_templates", "digits_cnn"), project,
                    ignore=shutil.ignore_patterns(".nnconsole-cache", "results"))
    outside = tmp_path / "private.png"
    shutil.copy(project / "data" / "images" / "00000.png", outside)
    csv = project / "data" / "validation.csv"
    lines = csv.read_text().splitlines()
    lines[4] = "../../private.png,0"
    csv.write_text("\n".join(lines) + "\n")
    with pytest.raises(ProjectError) as info:
        load_valid_project(str(project / "project.yaml"))
    [problem] = info.value.problems
    assert problem.path == "datasets.validation"
    assert f"{csv} line 5, column x: image path '../../private.png' points outside the project's folder" \
        in problem.message and "--allow-outside-data" in problem.message
    assert load_valid_project(str(project / "project.yaml"), allow_outside_data=True)
    # On its own (no project), a CSV may use images anywhere relative to it.
    assert check_dataset(str(csv)).row_count == len(lines) - 1
