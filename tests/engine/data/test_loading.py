"""nnconsole.engine.data.loading: NNC CSV parsing, error messages with line numbers, the decode cache, batch order."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from nnconsole.engine.data.loading import (DatasetError, class_histogram, epoch_order, load_dataset, peek_csv,
                                           validation_batches, worker_batches)
from tests.support.datasets import cache_entries, grey, image_csv, no_decoding, write_png


# ------------------------------------------------------------------------------------------ helpers

def write_csv(tmp_path: Path, text: str, name: str = "d.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------ parsing

def test_image_csv_gives_chw_float32_divided_by_255(tmp_path):
    csv_path = image_csv(tmp_path, n=3, labels=[7, 2, 9])
    ds = load_dataset(csv_path, {"x": (1, 8, 8), "y": (1,)}, cache=False)
    assert ds.variables == ["x", "y"]
    assert ds.size == 3
    assert ds.kinds == {"x": "image", "y": "numeric"}
    assert ds.cells("x") == ["img/0.png", "img/1.png", "img/2.png"]
    x, y = ds.arrays["x"], ds.arrays["y"]
    assert x.dtype == np.float32 and y.dtype == np.float32
    assert x.shape == (3, 1, 8, 8) and y.shape == (3, 1)
    for i in range(3):
        np.testing.assert_allclose(x[i, 0], grey(i) / 255.0, rtol=0, atol=1e-7)
    assert 0.0 <= x.min() and x.max() <= 1.0
    assert y[:, 0].tolist() == [7, 2, 9]
    assert ds.shapes == {"x": (1, 8, 8), "y": (1,)}


def test_normalize_false_keeps_0_255(tmp_path):
    ds = load_dataset(image_csv(tmp_path, n=2), normalize=False, cache=False)
    np.testing.assert_array_equal(ds.arrays["x"][1, 0], grey(1).astype(np.float32))
    assert ds.arrays["x"].max() > 1.0


def test_image_shape_without_expected_follows_the_file_mode(tmp_path):
    rgb = np.stack([grey(0), grey(1), grey(2)], axis=-1)
    write_png(tmp_path / "c.png", rgb)
    write_png(tmp_path / "g.png", grey(3))
    ds = load_dataset(write_csv(tmp_path, "x\nc.png\n", "c.csv"), cache=False)
    assert ds.arrays["x"].shape == (1, 3, 8, 8)
    for c in range(3):  # channels first, in RGB order
        np.testing.assert_allclose(ds.arrays["x"][0, c], grey(c) / 255.0, atol=1e-7)
    ds = load_dataset(write_csv(tmp_path, "x\ng.png\n", "g.csv"), cache=False)
    assert ds.arrays["x"].shape == (1, 1, 8, 8)


def test_expected_channels_convert_grey_and_colour(tmp_path):
    rgb = np.stack([grey(0), grey(0), grey(0)], axis=-1)  # a grey picture stored as RGB
    write_png(tmp_path / "c.png", rgb)
    write_png(tmp_path / "g.png", grey(5))
    csv_path = write_csv(tmp_path, "x\nc.png\ng.png\n")
    ds = load_dataset(csv_path, {"x": (1, 8, 8)}, cache=False)
    assert ds.arrays["x"].shape == (2, 1, 8, 8)
    np.testing.assert_allclose(ds.arrays["x"][0, 0], grey(0) / 255.0, atol=1e-7)
    ds = load_dataset(csv_path, {"x": (3, 8, 8)}, cache=False)
    assert ds.arrays["x"].shape == (2, 3, 8, 8)
    for c in range(3):
        np.testing.assert_allclose(ds.arrays["x"][1, c], grey(5) / 255.0, atol=1e-7)
    ds = load_dataset(csv_path, {"x": (8, 8)}, cache=False)
    assert ds.arrays["x"].shape == (2, 8, 8)


def test_numeric_vector_columns_are_combined_in_index_order(tmp_path):
    csv_path = write_csv(tmp_path, "x__2,x__0,x__1,y:label\n3,1,2,0\n6,4,5,1\n")
    ds = load_dataset(csv_path, {"x": (3,), "y": (1,)}, cache=False)
    assert ds.variables == ["x", "y"]
    np.testing.assert_array_equal(ds.arrays["x"], [[1, 2, 3], [4, 5, 6]])
    assert ds.arrays["y"].shape == (2, 1)
    assert ds.kinds == {"x": "numeric", "y": "numeric"}


def test_two_dimensional_indices_and_reshape_to_expected(tmp_path):
    header = ",".join(f"m__{i}__{j}" for i in range(2) for j in range(3))
    csv_path = write_csv(tmp_path, header + "\n0,1,2,10,11,12\n")
    ds = load_dataset(csv_path, cache=False)
    np.testing.assert_array_equal(ds.arrays["m"][0], [[0, 1, 2], [10, 11, 12]])
    ds = load_dataset(csv_path, {"m": (6,)}, cache=False)  # same number of values: reshaped
    np.testing.assert_array_equal(ds.arrays["m"][0], [0, 1, 2, 10, 11, 12])


def test_bom_crlf_quotes_and_blank_lines(tmp_path):
    path = tmp_path / "d.csv"
    path.write_bytes(b"\xef\xbb\xbfx__0,x__1,y\r\n1,\" 2.5\",0\r\n\r\n3,4e-1,1\r\n")
    ds = load_dataset(path, cache=False)
    np.testing.assert_allclose(ds.arrays["x"], [[1, 2.5], [3, 0.4]])
    assert ds.size == 2


# ------------------------------------------------------------------------------------------ errors

def expect_error(path, line, *parts, expected=None):
    with pytest.raises(DatasetError) as info:
        load_dataset(path, expected, cache=False)
    err = info.value
    msg = str(err)
    assert isinstance(err, ValueError)
    assert err.line == line, msg
    assert err.path == str(path)
    assert str(path) in msg
    if line is not None:
        assert f"line {line}" in msg, msg
    for part in parts:
        assert part in msg, msg
    return msg


def test_missing_csv(tmp_path):
    expect_error(tmp_path / "nope.csv", None, "not found")


def test_empty_csv(tmp_path):
    expect_error(write_csv(tmp_path, ""), 1, "empty", "header")
    expect_error(write_csv(tmp_path, "\n\n"), 1, "empty")


def test_header_without_rows(tmp_path):
    expect_error(write_csv(tmp_path, "x__0,y\n"), 2, "no data rows")


def test_missing_header_line(tmp_path):
    expect_error(write_csv(tmp_path, "1,2,0\n3,4,1\n"), 1, "looks like data", "header")
    write_png(tmp_path / "a.png", grey(0))
    expect_error(write_csv(tmp_path, "a.png,0\na.png,1\n"), 1, "looks like data")


def test_header_cell_without_name(tmp_path):
    expect_error(write_csv(tmp_path, "x__0,,y\n1,2,3\n"), 1, "column 2", "no variable name")


def test_duplicated_variable(tmp_path):
    expect_error(write_csv(tmp_path, "x:image,x:label\n1,2\n"), 1, "column x", "duplicated", "columns 1 and 2")
    expect_error(write_csv(tmp_path, "x,x__0,y\n1,2,3\n"), 1, "'x' is defined twice")
    expect_error(write_csv(tmp_path, "x__0,x__0__1,y\n1,2,3\n"), 1, "mix")


def test_indexed_columns_with_a_gap(tmp_path):
    expect_error(write_csv(tmp_path, "x__0,x__2,y\n1,2,3\n"), 1, "column x__1", "missing")


def test_variable_the_network_needs_is_missing(tmp_path):
    expect_error(write_csv(tmp_path, "x__0,x__1\n1,2\n"), 1, "no variable 'y'", "Input",
                 expected={"x": (2,), "y": (1,)})


def test_wrong_column_count(tmp_path):
    expect_error(write_csv(tmp_path, "x__0,x__1,y\n1,2,0\n1,2\n"), 3, "2 values", "3 columns")
    expect_error(write_csv(tmp_path, "x__0,x__1,y\n1,2,0\n\n1,2,0,9\n"), 4, "4 values")


def test_missing_image(tmp_path):
    csv_path = image_csv(tmp_path, n=4)
    os.remove(csv_path.parent / "img" / "2.png")
    expect_error(csv_path, 4, "column x", "image file 'img/2.png' not found", "relative to the CSV's folder")


def test_undecodable_image(tmp_path):
    csv_path = image_csv(tmp_path, n=3)
    (csv_path.parent / "img" / "1.png").write_bytes(b"this is not a png")
    expect_error(csv_path, 3, "column x", "cannot decode image file 'img/1.png'")


def test_image_size_mismatch(tmp_path):
    csv_path = image_csv(tmp_path, n=3)
    write_png(csv_path.parent / "img" / "2.png", grey(2, h=9, w=8))
    expect_error(csv_path, 4, "column x", "9x8", "expects 8x8", expected={"x": (1, 8, 8)})
    expect_error(csv_path, 4, "9x8", "first image")  # no expected shape: compared with the first image
    csv_ok = image_csv(tmp_path / "other", n=2)
    expect_error(csv_ok, 2, "8x8", "expects 7x8", expected={"x": (1, 7, 8)})
    expect_error(csv_ok, 1, "holds images", expected={"x": (64,)})


def test_non_numeric_values(tmp_path):
    expect_error(write_csv(tmp_path, "x__0,x__1,y\n1,2,0\n1,abc,0\n"), 3, "column x__1", "non-numeric value 'abc'")
    expect_error(write_csv(tmp_path, "x__0,y:label\n1,0\n2,\n"), 3, "column y", "empty value")
    expect_error(write_csv(tmp_path, "x__0,y\n1,0\nnan,1\n"), 3, "column x__0", "not a finite number")
    # an image path in a column whose first cell was a number
    expect_error(write_csv(tmp_path, "x,y\n1,0\npic.png,1\n"), 3, "column x", "non-numeric")


def test_numeric_length_mismatch_with_network(tmp_path):
    header = ",".join(f"x__{i}" for i in range(13)) + ",y"
    path = write_csv(tmp_path, header + "\n" + ",".join(["0"] * 14) + "\n")
    expect_error(path, 1, "13 value", "expects shape [12]", expected={"x": (12,), "y": (1,)})


def test_bad_encoding(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes("x__0,y\n1,0\n".encode() + "caf\u00e9,1\n".encode("latin-1"))
    expect_error(path, 3, "not valid UTF-8", "0xe9", "UTF-8")


def test_malformed_quotes(tmp_path):
    expect_error(write_csv(tmp_path, 'x__0,y\n1,0\n"2,1\n'), 3, "malformed CSV")


# ------------------------------------------------------------------------------------------ cache

def test_second_load_uses_cache_without_decoding(tmp_path, monkeypatch):
    csv_path = image_csv(tmp_path, n=5)
    shapes = {"x": (1, 8, 8), "y": (1,)}
    first = load_dataset(csv_path, shapes)
    assert len(cache_entries(csv_path.parent / ".nnconsole-cache")) == 1
    no_decoding(monkeypatch)
    second = load_dataset(csv_path, shapes)
    assert second.variables == first.variables and second.size == 5
    for v in first.variables:
        np.testing.assert_array_equal(second.arrays[v], first.arrays[v])
        assert second.arrays[v].dtype == np.float32
    assert second.kinds == first.kinds and second.cells("x") == first.cells("x")
    # the cache holds uint8 pixels: normalize=False reuses it (nothing decoded) and skips the division
    raw = load_dataset(csv_path, shapes, normalize=False)
    np.testing.assert_array_equal(raw.arrays["x"][2, 0], grey(2).astype(np.float32))
    # the key includes the expected shapes: a different layout decodes again
    with pytest.raises(DatasetError, match="an image was decoded"):
        load_dataset(csv_path, {"x": (3, 8, 8)})


def test_cache_invalidated_by_image_change_and_csv_change(tmp_path, monkeypatch):
    csv_path = image_csv(tmp_path, n=3)
    load_dataset(csv_path)
    img = csv_path.parent / "img" / "1.png"
    write_png(img, 255 - grey(1))
    st = img.stat()
    os.utime(img, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    ds = load_dataset(csv_path)
    np.testing.assert_allclose(ds.arrays["x"][1, 0], (255 - grey(1)) / 255.0, atol=1e-7)
    # old entry of the same CSV replaced, not accumulated
    assert len(cache_entries(csv_path.parent / ".nnconsole-cache")) == 1
    csv_path.write_text("x:image,y:label\nimg/0.png,5\n", encoding="utf-8")
    no_decoding(monkeypatch)
    with pytest.raises(DatasetError, match="an image was decoded"):
        load_dataset(csv_path)


def test_cache_falls_back_to_home_when_csv_folder_not_writable(tmp_path, monkeypatch):
    csv_path = image_csv(tmp_path, n=2)
    (csv_path.parent / ".nnconsole-cache").write_text("a file where the cache folder should be")
    home = tmp_path / "home"
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: home))
    load_dataset(csv_path)
    assert len(cache_entries(home / ".cache" / "nnconsole" / "datasets")) == 1
    no_decoding(monkeypatch)
    assert load_dataset(csv_path).size == 2


def test_explicit_cache_dir_corrupt_entry_and_cache_off(tmp_path, monkeypatch):
    csv_path = image_csv(tmp_path, n=2)
    cache_dir = tmp_path / "cache"
    load_dataset(csv_path, cache_dir=cache_dir)
    (entry,) = cache_entries(cache_dir)
    assert not (csv_path.parent / ".nnconsole-cache").exists()
    (entry / "v0.npy").write_bytes(b"garbage")  # a broken entry is rebuilt, not fatal
    assert load_dataset(csv_path, cache_dir=cache_dir).size == 2
    no_decoding(monkeypatch)
    assert load_dataset(csv_path, cache_dir=cache_dir).size == 2
    with pytest.raises(DatasetError, match="an image was decoded"):
        load_dataset(csv_path, cache=False)


def test_numeric_errors_not_hidden_by_cache(tmp_path):
    write_png(tmp_path / "a.png", grey(0))
    path = write_csv(tmp_path, "x,y\na.png,1\n")
    load_dataset(path)
    path.write_text("x,y\na.png,one\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="line 2, column y"):
        load_dataset(path)


# ------------------------------------------------------------------------------------------ preview, histogram

def test_peek_csv_does_not_decode(tmp_path, monkeypatch):
    csv_path = image_csv(tmp_path, n=6)
    no_decoding(monkeypatch)
    preview = peek_csv(csv_path, max_rows=2)
    assert preview.columns == ["x:image", "y:label"]
    assert preview.variables == ["x", "y"]
    assert preview.row_count == 6
    assert preview.rows == [["img/0.png", "0"], ["img/1.png", "1"]]
    vec = peek_csv(write_csv(tmp_path, "x__0,x__1,y\n1,2,0\n"), 10)
    assert vec.variables == ["x", "y"] and vec.row_count == 1
    with pytest.raises(DatasetError, match="line 3"):
        peek_csv(write_csv(tmp_path, "x__0,y\n1,0\n1\n"))


def test_class_histogram(tmp_path):
    ds = load_dataset(image_csv(tmp_path, n=6, labels=[2, 0, 2, 1, 2, 0]), cache=False)
    assert class_histogram(ds, "y") == {0: 2, 1: 1, 2: 3}
    assert list(class_histogram(ds, "y")) == [0, 1, 2]
    with pytest.raises(ValueError, match="values per sample"):
        class_histogram(ds, "x")
    with pytest.raises(KeyError):
        class_histogram(ds, "z")
    reg = load_dataset(write_csv(tmp_path, "y\n0.5\n1\n"), cache=False)
    with pytest.raises(ValueError, match="non-integer"):
        class_histogram(reg, "y")


# ------------------------------------------------------------------------------------------ order and sharding

def test_epoch_order_is_a_seeded_permutation():
    a = epoch_order(100, seed=3, epoch=0)
    assert sorted(a.tolist()) == list(range(100))
    np.testing.assert_array_equal(a, epoch_order(100, seed=3, epoch=0))
    assert not np.array_equal(a, epoch_order(100, seed=3, epoch=1))
    assert not np.array_equal(a, epoch_order(100, seed=4, epoch=0))
    np.testing.assert_array_equal(epoch_order(5, 0, 7, shuffle=False), np.arange(5))
    assert len(epoch_order(0, 0, 0)) == 0


@pytest.mark.parametrize("size,batch,world", [(100, 10, 2), (101, 10, 2), (7, 4, 3), (64, 8, 1), (3, 2, 4),
                                              (1797, 32, 3), (96, 32, 3)])
def test_worker_batches_cover_everything_disjointly(size, batch, world):
    order = epoch_order(size, seed=1, epoch=2)
    per_rank = [worker_batches(order, batch, r, world) for r in range(world)]
    iterations = -(-size // (batch * world))
    assert all(len(b) == iterations for b in per_rank)
    extended = np.concatenate([order] * (iterations * batch * world // size + 1))
    seen = []
    for i in range(iterations):
        blocks = [per_rank[r][i] for r in range(world)]
        assert all(len(b) == batch for b in blocks)  # every batch full
        # global batch i is the slice [i*B*N, (i+1)*B*N) of the (wrapped) order, rank r its r-th block
        np.testing.assert_array_equal(np.concatenate(blocks),
                                      extended[i * batch * world:(i + 1) * batch * world])
        if size >= batch * world:
            assert len(set(np.concatenate(blocks).tolist())) == batch * world  # disjoint across ranks
        seen.extend(np.concatenate(blocks).tolist())
    assert set(seen) == set(range(size))  # at least once
    if size % (batch * world) == 0:
        assert sorted(seen) == list(range(size))  # exactly once


def test_worker_batches_rejects_bad_arguments():
    with pytest.raises(ValueError):
        worker_batches(np.arange(10), 0, 0, 1)
    with pytest.raises(ValueError):
        worker_batches(np.arange(10), 2, 2, 2)
    assert worker_batches(np.arange(0), 4, 0, 2) == []


@pytest.mark.parametrize("size,batch,world", [(100, 10, 4), (101, 10, 4), (360, 32, 3), (5, 4, 8), (1, 1, 1),
                                              (33, 8, 2)])
def test_validation_batches_count_every_row_once(size, batch, world):
    per_rank = [validation_batches(size, batch, r, world) for r in range(world)]
    assert len({len(b) for b in per_rank}) == 1  # same number of batches on every worker
    valid_rows = []
    for r, batches in enumerate(per_rank):
        mine = []
        for idx, valid in batches:
            assert len(idx) == batch and 0 <= valid <= batch
            assert idx.min() >= 0 and idx.max() < size
            mine.extend(idx[:valid].tolist())
        if mine:
            assert mine == list(range(mine[0], mine[0] + len(mine)))  # contiguous share
        valid_rows.extend(mine)
    assert sum(v for b in per_rank for _, v in b) == size
    assert sorted(valid_rows) == list(range(size))  # disjoint, complete
