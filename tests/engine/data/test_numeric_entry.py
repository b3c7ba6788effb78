"""Datasets without images held once per host (issue 31): numeric columns and NNC's .csv matrix cells go into the
same cache entry as image datasets (index only), parsed by one process and memory-mapped by every other, opened
later without parsing; a changed matrix file is seen as a changed image is; training ends with the parameters
the in-memory load gives."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from nnconsole.engine.data import dataset_entry, loading
from nnconsole.engine.data.loading import load_dataset
from nnconsole.engine.project.io import load_project, save_project
from tests.support.datasets import cache_entries, write_png
from tests.support.paths import ROOT
from tests.support.projects import tabular_project, write_tabular_csv
from tests.support.training import final_params, train_file_in_process

SHAPES = {"x": (4,), "y": (1,)}


def no_parsing(monkeypatch) -> None:
    """Parsing the CSV (with or without a cache) fails the test."""
    for module in (dataset_entry, loading):
        monkeypatch.setattr(module, "build_index", lambda *a, **k: pytest.fail("the CSV was parsed again"))


def mapped_files() -> list:
    """The .npy files this process has memory-mapped (Linux's /proc/self/maps)."""
    with open("/proc/self/maps") as fh:
        return [line.split()[-1] for line in fh if line.rstrip().endswith(".npy")]


def test_a_numeric_csv_is_parsed_once_into_the_entry_and_opened_after(tmp_path, monkeypatch):
    csv_path = tmp_path / "train.csv"
    write_tabular_csv(str(csv_path), n=300)
    first = load_dataset(csv_path, SHAPES, cache_dir=tmp_path / "c", label_classes={"y": 3})
    (entry,) = cache_entries(tmp_path / "c")
    for name in ("x", "y"):  # memory-mapped from the entry, not parsed into this process's memory
        assert isinstance(first.numbers[name], np.memmap) and not first.numbers[name].flags.writeable
    assert set(mapped_files()) >= {str(entry / "x0.npy"), str(entry / "x1.npy")}
    memory = load_dataset(csv_path, SHAPES, cache=False, label_classes={"y": 3})  # as every rank loaded it before
    no_parsing(monkeypatch)
    again = load_dataset(csv_path, SHAPES, cache_dir=tmp_path / "c", label_classes={"y": 3})
    for name in ("x", "y"):
        np.testing.assert_array_equal(again.numbers[name], memory.numbers[name])
        assert again.numbers[name].dtype == np.float32 and again.numbers[name].shape == memory.numbers[name].shape
    rows = np.arange(300)[::-7]
    np.testing.assert_array_equal(again.gather("x", rows), memory.gather("x", rows))


def test_a_changed_numeric_csv_is_parsed_again(tmp_path):
    csv_path = tmp_path / "train.csv"
    write_tabular_csv(str(csv_path), n=40)
    load_dataset(csv_path, SHAPES, cache_dir=tmp_path / "c")
    write_tabular_csv(str(csv_path), n=40, seed=9)
    again = load_dataset(csv_path, SHAPES, cache_dir=tmp_path / "c")
    np.testing.assert_array_equal(again.numbers["x"], load_dataset(csv_path, SHAPES, cache=False).numbers["x"])
    assert len(cache_entries(tmp_path / "c")) == 1  # the old version's entry went


def _matrices(folder: Path, values: list) -> None:
    (folder / "seq").mkdir(parents=True, exist_ok=True)
    for i, v in enumerate(values):
        (folder / "seq" / f"{i}.csv").write_text(f"{v},{v + 1}\n{v + 2},{v + 3}\n{v + 4},{v + 5}\n")


@pytest.mark.parametrize("with_images", [False, True])
def test_matrix_cells_are_cached_and_a_changed_matrix_file_is_read_again(tmp_path, monkeypatch, with_images):
    """NNC's sequence cells (a .csv matrix per row) are numbers of the index too; the entry stamps each distinct
    matrix file, so a warm start sees one changed as it sees a changed image (with images, the entry held the
    matrices before, and a changed matrix file went unseen)."""
    _matrices(tmp_path, [0, 10, 20])
    header, cells = "x,y", [f"seq/{i % 3}.csv,{i % 2}" for i in range(12)]
    if with_images:
        write_png(tmp_path / "a.png", np.zeros((2, 2), np.uint8))
        header, cells = "x,y,p", [c + ",a.png" for c in cells]
    csv_path = tmp_path / "seq.csv"
    csv_path.write_text(header + "\n" + "\n".join(cells) + "\n")
    shapes = {"x": (3, 2), "y": (1,)}
    first = load_dataset(csv_path, shapes, cache_dir=tmp_path / "c")
    assert len(cache_entries(tmp_path / "c")) == 1
    assert first.numbers["x"].shape == (12, 3, 2) and first.numbers["x"][4, 2, 1] == 15
    with monkeypatch.context() as patch:
        no_parsing(patch)
        again = load_dataset(csv_path, shapes, cache_dir=tmp_path / "c")
        np.testing.assert_array_equal(again.numbers["x"], first.numbers["x"])
    changed_file = tmp_path / "seq" / "1.csv"
    st = changed_file.stat()
    _matrices(tmp_path, [0, 19, 20])  # the same size: its mtime tells
    os.utime(changed_file, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))
    changed = load_dataset(csv_path, shapes, cache_dir=tmp_path / "c")
    assert changed.numbers["x"][4, 2, 1] == 24 and changed.numbers["x"][3, 2, 1] == 5


SCRIPT = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, {root!r})
    from nnconsole.engine.data import dataset_entry, loading
    from nnconsole.engine.data.loading import load_dataset
    real = dataset_entry.build_index
    def logged(*args, **kwargs):
        with open({log!r}, "a") as fh:
            fh.write(f"{{os.getpid()}}\\n")
        time.sleep(1.0)  # long enough for the other process to find the build lock taken
        return real(*args, **kwargs)
    dataset_entry.build_index = logged
    ds = load_dataset({csv!r}, {{"x": (4,), "y": (1,)}}, cache_dir={cache!r})
    with open("/proc/self/maps") as fh:  # the entry's files this process maps
        mapped = sorted({{os.path.dirname(line.split()[-1]) for line in fh if line.rstrip().endswith(".npy")}})
    print(type(ds.numbers["x"]).__name__, ",".join(mapped), repr(float(ds.numbers["x"].sum())))
""")


def test_two_processes_loading_a_numeric_csv_at_once_parse_it_once_and_map_one_entry(tmp_path):
    csv_path = tmp_path / "train.csv"
    write_tabular_csv(str(csv_path), n=500)
    log = tmp_path / "parsed.log"
    code = SCRIPT.format(root=ROOT, log=str(log), csv=str(csv_path), cache=str(tmp_path / "c"))
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, cwd=str(tmp_path)) for _ in range(2)]
    outputs = [p.communicate(timeout=120) for p in procs]
    for p, (_, err) in zip(procs, outputs):
        assert p.returncode == 0, err
    results = {out.split()[-3] + " " + out.split()[-2] + " " + out.split()[-1] for out, _ in outputs}
    (entry,) = cache_entries(tmp_path / "c")
    want = float(load_dataset(csv_path, SHAPES, cache=False).numbers["x"].sum())
    assert results == {f"memmap {entry} {want!r}"}
    assert len(log.read_text().split()) == 1, "both processes parsed the CSV: the entry was not shared"


def test_training_from_the_entry_ends_with_the_parameters_of_the_in_memory_load(tmp_path):
    params = {}
    for cache in (False, True):
        path = tabular_project(str(tmp_path / str(cache)), n=96, epochs=2)
        project = load_project(path)
        project.datasets.cache = cache
        save_project(project, path, backup=False)
        params[cache] = final_params(train_file_in_process(path))
        assert bool(cache_entries(Path(path).parent / ".nnconsole-cache")) == cache
    assert sorted(params[True]) == sorted(params[False])
    for name in params[False]:
        np.testing.assert_array_equal(params[True][name], params[False][name], err_msg=name)
