"""Distinct image files matched by the file a cell names, not by its spelling (issue 31): ``a.png``, ``./a.png``,
``sub/../a.png``, an absolute path and a symlink to the same file are one file of the index, decoded and stored
once; errors still name the CSV line and the cell as written where the file first appears; a spelling whose link
is pointed elsewhere after the build makes the entry stale."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from nnconsole.engine.data import decode as dataset_decode
from nnconsole.engine.data.csv_reader import DatasetError
from nnconsole.engine.data.index import build_index
from nnconsole.engine.data.loading import load_dataset
from tests.support.datasets import cache_entries
from tests.support.image_projects import cycled_image_project, cycled_rows
from tests.support.training import final_params, train_file_in_process

SHAPES = {"x": (1, 8, 8), "y": (1,)}


def spellings(folder: Path, i: int) -> list:
    """Five ways to name ``img/<i>.png`` from a CSV in ``folder`` (``sub/`` a folder, ``linked/`` a folder of
    symlinks to the images)."""
    return [f"img/{i}.png", f"./img/{i}.png", f"sub/../img/{i}.png", str(folder / "img" / f"{i}.png"),
            f"linked/{i}.png"]


def mix_spellings(folder: Path, name: str, files: int) -> None:
    """Rewrite ``folder/name`` (a cycled CSV) naming each row's file with a different spelling of it."""
    (folder / "sub").mkdir(exist_ok=True)
    (folder / "linked").mkdir(exist_ok=True)
    for i in range(files):
        link = folder / "linked" / f"{i}.png"
        if not link.is_symlink():
            link.symlink_to(Path("..") / "img" / f"{i}.png")
    lines = (folder / name).read_text(encoding="utf-8").splitlines()
    out = [lines[0]]
    for k, line in enumerate(lines[1:]):
        cell, label = line.split(",")
        i = int(Path(cell).stem)
        out.append(f"{spellings(folder, i)[k % 5]},{label}")
    (folder / name).write_text("\n".join(out) + "\n", encoding="utf-8")


@pytest.mark.parametrize("cache", [True, False])
def test_every_spelling_of_a_file_is_one_file_decoded_once(tmp_path, monkeypatch, cache):
    project = cycled_image_project(str(tmp_path / "p"), rows=70, files=7)
    folder = Path(project).parent
    plain = load_dataset(folder / "train.csv", SHAPES, cache=cache, cache_dir=tmp_path / "c0")
    mix_spellings(folder, "train.csv", 7)
    decoded = []
    real = dataset_decode._decode_image
    monkeypatch.setattr(dataset_decode, "_decode_image", lambda *a: decoded.append(a[0]) or real(*a))
    mixed = load_dataset(folder / "train.csv", SHAPES, cache=cache, cache_dir=tmp_path / "c1", build_workers=1)
    assert len(mixed.files["x"]) == 7 and mixed.images["x"].shape == (7, 1, 8, 8)
    assert len(decoded) == 7
    rows = np.arange(70)
    np.testing.assert_array_equal(mixed.gather("x", rows), plain.gather("x", rows))
    np.testing.assert_array_equal(mixed.gather("y", rows), plain.gather("y", rows))
    if cache:
        (entry,) = cache_entries(tmp_path / "c1")
        assert np.load(entry / "v0.npy", mmap_mode="r").shape == (7, 1, 8, 8)


def test_training_on_mixed_spellings_ends_with_the_parameters_of_one_spelling(tmp_path):
    plain = final_params(train_file_in_process(cycled_image_project(str(tmp_path / "plain"))))
    project = cycled_image_project(str(tmp_path / "mixed"))
    folder = Path(project).parent
    mix_spellings(folder, "train.csv", 7)
    mix_spellings(folder, "valid.csv", 7)
    mixed = final_params(train_file_in_process(project))
    assert sorted(mixed) == sorted(plain)
    for name in plain:
        np.testing.assert_array_equal(mixed[name], plain[name], err_msg=name)


def test_a_bad_file_is_reported_at_the_first_line_and_spelling_naming_it(tmp_path):
    project = cycled_image_project(str(tmp_path / "p"), rows=21, files=7)
    folder = Path(project).parent
    mix_spellings(folder, "train.csv", 7)
    (folder / "img" / "2.png").write_bytes(b"not a png")
    first = spellings(folder, 2)[2]  # row 2 (CSV line 4) names file 2 with its third spelling
    for cache in (True, False):
        with pytest.raises(DatasetError) as info:
            load_dataset(folder / "train.csv", SHAPES, cache=cache, cache_dir=tmp_path / "c")
        assert info.value.line == 4 and f"cannot decode image file '{first}'" in str(info.value)


def test_a_link_pointed_at_another_file_after_the_build_is_read_again(tmp_path):
    project = cycled_image_project(str(tmp_path / "p"), rows=70, files=7)
    folder = Path(project).parent
    mix_spellings(folder, "train.csv", 7)
    load_dataset(folder / "train.csv", SHAPES, cache_dir=tmp_path / "c")
    Image.fromarray(np.full((8, 8), 9, np.uint8), "L").save(folder / "other.png")
    link = folder / "linked" / "4.png"
    link.unlink()
    link.symlink_to(Path("..") / "other.png")
    again = load_dataset(folder / "train.csv", SHAPES, cache_dir=tmp_path / "c")
    rows = [k for k, (cell, _) in enumerate(cycled_rows(70, 7)) if cell == "img/4.png"]
    linked = [k for k in rows if k % 5 == 4]
    others = [k for k in rows if k % 5 != 4]
    np.testing.assert_array_equal(again.gather("x", linked), np.full((len(linked), 1, 8, 8), 9 / 255, np.float32))
    assert not np.array_equal(again.gather("x", others[:1]), again.gather("x", linked[:1]))
    assert len(again.files["x"]) == 8  # the link now names a file of its own


def test_the_cheap_checks_stat_each_spelling_once(tmp_path, monkeypatch):
    """A cold index stats each distinct spelling once (the stat that finds its file), never a row."""
    project = cycled_image_project(str(tmp_path / "p"), rows=70, files=7)
    folder = Path(project).parent
    mix_spellings(folder, "train.csv", 7)
    stats = []
    real = os.stat
    monkeypatch.setattr(dataset_decode.os, "stat", lambda p, *a, **k: stats.append(os.fspath(p)) or real(p, *a, **k))
    index, _, _ = build_index(folder / "train.csv", SHAPES)
    images = [p for p in stats if p.endswith(".png")]
    assert len(images) == 35  # 7 files x 5 spellings (the absolute one joins to the same path as 'img/i.png')
    assert len(index.files["x"]) == 7
