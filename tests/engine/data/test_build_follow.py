"""Issue 31: a process that finds another's cache build going on behind training follows it chunk by chunk
(engine/data/build_follow.py) instead of waiting on the build lock for the whole entry. Here the builder is a
background build of this process (its thread holds the CSV's flock) and the follower a second load of the same
CSV, which takes that lock through another open file and so waits for it as another process would."""
from __future__ import annotations

import json
import os
import time

import numpy as np
import pytest

from nnconsole.engine.data import build_follow, cache_build
from nnconsole.engine.data.build_follow import FollowedState
from nnconsole.engine.data.build_overlap import BuildingImages
from nnconsole.engine.data.csv_reader import DatasetError
from nnconsole.engine.data.loading import epoch_order, load_dataset
from nnconsole.engine.test_seams import SEAMS_VARIABLE
from tests.support.datasets import cache_entries
from tests.support.image_projects import write_cycled_csv

SHAPES = {"x": (1, 8, 8), "y": (1,)}


def _first_epoch(seed: int = 5):
    return lambda size: epoch_order(size, seed, 0, True)


def _load(csv_path, tmp_path, **kwargs):
    return load_dataset(csv_path, SHAPES, cache_dir=tmp_path / "c", first_order=_first_epoch(), **kwargs)


def test_a_second_loader_follows_the_build_and_gathers_the_finished_caches_pixels(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_build, "CHUNK", 3)
    csv_path = write_cycled_csv(tmp_path, "train.csv", rows=60, files=30)
    reference = load_dataset(csv_path, SHAPES, cache=False)
    monkeypatch.setenv(SEAMS_VARIABLE, json.dumps({"decode_delay_ms": 40}))  # the build: about 1.2 s
    builder = _load(csv_path, tmp_path)
    started = time.monotonic()
    follower = _load(csv_path, tmp_path)
    source = follower.images["x"]
    assert isinstance(source, BuildingImages) and isinstance(source.state, FollowedState), \
        "the second loader waited for the whole entry instead of following the build"
    assert time.monotonic() - started < 1.0
    assert not builder.images["x"].state.ended, "the build had ended before the follower opened it"
    for batch in np.array_split(epoch_order(60, 5, 0), 8):  # the first epoch's order, during the build
        np.testing.assert_array_equal(follower.gather("x", batch), reference.gather("x", batch))
    np.testing.assert_array_equal(follower.gather("y", np.arange(60)), reference.gather("y", np.arange(60)))
    assert source.state.wait_end(30) and source.state.error is None and not source.state.stopped
    assert builder.images["x"].state.wait_end(30)
    (entry,) = cache_entries(tmp_path / "c")
    st = os.stat(entry / "v0.npy")
    assert source.state.mapped[0] == (st.st_dev, st.st_ino), "the follower did not read the entry's own file"
    assert not list(entry.glob("q*.npy")) and not (entry / build_follow.MARKER_FILE).exists()
    np.testing.assert_array_equal(follower.gather("x", np.arange(60)), reference.gather("x", np.arange(60)))


def test_a_follower_raises_the_builders_located_error_for_a_bad_image(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_build, "CHUNK", 2)
    csv_path = write_cycled_csv(tmp_path, "train.csv", rows=40, files=20)
    first = epoch_order(40, 5, 0)
    bad = int(first[-1]) % 20  # a file the epoch needs late: the follower has trained on earlier chunks
    (tmp_path / "img" / f"{bad}.png").write_bytes(b"not a png")
    monkeypatch.setenv(SEAMS_VARIABLE, json.dumps({"decode_delay_ms": 30}))
    builder = _load(csv_path, tmp_path)
    follower = _load(csv_path, tmp_path)
    assert isinstance(follower.images["x"].state, FollowedState)
    with pytest.raises(DatasetError) as built:
        builder.gather("x", np.arange(40))
    with pytest.raises(DatasetError) as followed:
        follower.gather("x", first[:4])  # chunks written before the failure, asked after it: the error still
        follower.gather("x", np.arange(40))
    assert str(followed.value) == str(built.value)
    assert f"img/{bad}.png" in str(followed.value) and str(bad + 2) in str(followed.value)
    assert followed.value.line == built.value.line and followed.value.path == built.value.path
    assert not list((tmp_path / "c").glob(".*.partial")), "the failed build's folder was left"


def test_a_follower_of_a_stopped_build_decodes_what_it_still_needs(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_build, "CHUNK", 2)
    csv_path = write_cycled_csv(tmp_path, "train.csv", rows=40, files=16)
    reference = load_dataset(csv_path, SHAPES, cache=False)
    monkeypatch.setenv(SEAMS_VARIABLE, json.dumps({"decode_delay_ms": 30}))
    asked = []

    def stop() -> bool:  # the builder's: a stop once a few chunks are written
        asked.append(1)
        return len(asked) > 4
    _load(csv_path, tmp_path, stop=stop)
    follower = _load(csv_path, tmp_path)
    state = follower.images["x"].state
    assert isinstance(state, FollowedState)
    all_rows = np.arange(40)
    np.testing.assert_array_equal(follower.gather("x", all_rows), reference.gather("x", all_rows))
    assert state.wait_end(30) and state.stopped and state.error is None
    assert list((tmp_path / "c").glob(".*.partial/progress.json")), "the build folder was not kept for resuming"
    assert not cache_entries(tmp_path / "c")


def test_a_follower_ignores_a_build_folder_without_an_announcement(tmp_path, monkeypatch):
    """A build that does not go on in the background (no first_order) is waited for whole, as before."""
    monkeypatch.setattr(cache_build, "CHUNK", 3)
    csv_path = write_cycled_csv(tmp_path, "train.csv", rows=30, files=12)
    (tmp_path / "c").mkdir()
    partial = tmp_path / "c" / ".x.partial"
    partial.mkdir()
    assert build_follow.read_marker(partial, "k") is None
    (partial / build_follow.MARKER_FILE).write_text(json.dumps({"key": "other", "index": {}, "chunk": 3,
                                                                "size": 1, "order": "files"}))
    assert build_follow.read_marker(partial, "k") is None  # another key's
    ds = _load(csv_path, tmp_path)
    assert isinstance(ds.images["x"], BuildingImages) and not isinstance(ds.images["x"].state, FollowedState)
