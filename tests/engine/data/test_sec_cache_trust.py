"""Issue 25, items 2, 3, 12 and 17: the dataset cache trusts nothing it did not write.

2. a link planted at a build folder's name is never followed, and a build removes only the files it wrote;
3. an array swapped into an entry (same shape, other content) or an entry of another user is never trained on;
12. a FIFO in place of an entry's meta or array, or of a build's progress file, is refused without hanging;
17. a leftover progress file of the wrong JSON type, and a damaged entry that cannot be removed, end in a
    clear message (or none) and a correct dataset, never in a traceback.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from nnconsole.engine.data.loading import load_dataset

ROOT = Path(__file__).resolve().parents[3]
N = 6


def grey(i: int) -> np.ndarray:
    return ((np.arange(64).reshape(8, 8) * 3 + i * 17) % 256).astype(np.uint8)


def image_csv(tmp_path: Path) -> Path:
    from PIL import Image

    folder = tmp_path / "ds"
    (folder / "img").mkdir(parents=True)
    rows = ["x:image,y:label"]
    for i in range(N):
        Image.fromarray(grey(i)).save(folder / "img" / f"{i}.png")
        rows.append(f"img/{i}.png,{i % 2}")
    (folder / "train.csv").write_text("\n".join(rows) + "\n")
    return folder / "train.csv"


def expected() -> np.ndarray:
    return np.stack([grey(i) for i in range(N)])[:, None]


def built(tmp_path: Path):
    """(csv, cache folder, the one entry) after a first load."""
    csv_path = image_csv(tmp_path)
    cache = tmp_path / "cache"
    load_dataset(csv_path, cache_dir=cache)
    (entry,) = [p for p in cache.iterdir() if p.is_dir() and not p.name.startswith(".")]
    return csv_path, cache, entry


def victim(tmp_path: Path) -> Path:
    folder = tmp_path / "victim"
    folder.mkdir()
    for name in ("precious.txt", "v0.npy", "progress.json"):
        (folder / name).write_text("the user's own file")
    return folder


def assert_victim_intact(folder: Path) -> None:
    assert sorted(p.name for p in folder.iterdir()) == ["precious.txt", "progress.json", "v0.npy"]
    assert all(p.read_text() == "the user's own file" for p in folder.iterdir())


# ---- item 2 ------------------------------------------------------------------------------------------------
def test_a_link_at_the_build_folder_name_is_not_followed_and_its_target_not_emptied(tmp_path):
    csv_path, cache, entry = built(tmp_path)
    shutil.rmtree(entry)
    target = victim(tmp_path)
    (cache / f".{entry.name}.partial").symlink_to(target)  # the name the build folder used to have
    data = load_dataset(csv_path, cache_dir=cache)
    np.testing.assert_array_equal(data.images["x"], expected())
    assert_victim_intact(target)
    assert (cache / f".{entry.name}.partial").is_symlink()  # not ours: left alone


def test_a_stale_entry_holding_other_files_loses_only_what_a_build_wrote(tmp_path):
    csv_path, cache, entry = built(tmp_path)
    stale = cache / (entry.name[:-32] + "0" * 32)  # the same CSV's entry of an older version
    shutil.copytree(entry, stale)
    (stale / "notes.txt").write_text("not the cache's")
    linked = cache / (entry.name[:-32] + "1" * 32)
    linked.symlink_to(victim(tmp_path))
    (csv_path.parent / "img" / "0.png").touch()  # new mtime: a new key, a new build that removes stale entries
    os.utime(csv_path.parent / "img" / "0.png", ns=(1, 1))
    load_dataset(csv_path, cache_dir=cache)
    assert sorted(p.name for p in stale.iterdir()) == ["notes.txt"]  # its meta and arrays went, the rest stays
    assert_victim_intact(tmp_path / "victim")


def test_build_folders_are_private_and_unpredictable(tmp_path, monkeypatch):
    from nnconsole.engine.data import cache_build

    seen = []
    real = cache_build.build_entry

    def spy(partial, *args, **kwargs):
        seen.append((partial.name, oct(partial.stat().st_mode & 0o777), partial.is_symlink()))
        return real(partial, *args, **kwargs)

    monkeypatch.setattr(cache_build, "build_entry", spy)
    for run in ("a", "b"):
        load_dataset(image_csv(tmp_path / run), cache_dir=tmp_path / run / "cache")
    (first, mode, link), (second, _, _) = seen
    assert mode == "0o700" and not link
    assert first != second and len(first.split(".")[-2]) >= 16  # a random part of 64 bits


# ---- item 3 ------------------------------------------------------------------------------------------------
def test_a_same_shape_array_swapped_into_an_entry_is_refused_and_rebuilt(tmp_path, caplog):
    csv_path, cache, entry = built(tmp_path)
    np.save(entry / "v0.npy", np.zeros((N, 1, 8, 8), np.uint8))  # same header, same size: blank images
    data = load_dataset(csv_path, cache_dir=cache)
    np.testing.assert_array_equal(data.images["x"], expected())
    assert "does not match the checksum" in caplog.text
    assert "checksums" in json.loads((entry / "meta.json").read_text())


def test_a_poisoned_entry_with_a_matching_checksum_in_a_forged_meta_is_still_checked(tmp_path):
    """The meta's checksum is of the arrays as written: an array changed in place after the build is caught."""
    csv_path, cache, entry = built(tmp_path)
    raw = bytearray((entry / "v0.npy").read_bytes())
    raw[-1] ^= 0xFF
    (entry / "v0.npy").write_bytes(bytes(raw))
    np.testing.assert_array_equal(load_dataset(csv_path, cache_dir=cache).images["x"], expected())


@pytest.mark.skipif(os.geteuid() != 0, reason="giving files to another user needs root")
@pytest.mark.parametrize("part", ["entry", "v0.npy", "meta.json"])
def test_an_entry_of_another_user_is_not_trained_on(tmp_path, caplog, part):
    csv_path, cache, entry = built(tmp_path)
    poisoned = np.zeros((N, 1, 8, 8), np.uint8)
    np.save(entry / "v0.npy", poisoned)
    meta = json.loads((entry / "meta.json").read_text())
    from nnconsole.engine.data.cache import array_checksum  # the attacker computes a matching checksum

    with open(entry / "v0.npy", "rb") as fh:
        offset = len(fh.read(128).split(b"\n", 1)[0]) + 1
    fd = os.open(entry / "v0.npy", os.O_RDONLY)
    meta["checksums"]["x"] = array_checksum(fd, offset, N, 64, meta["chunk_rows"])
    os.close(fd)
    (entry / "meta.json").write_text(json.dumps(meta))
    os.chown(entry if part == "entry" else entry / part, 12345, 12345)
    data = load_dataset(csv_path, cache_dir=cache)
    np.testing.assert_array_equal(data.images["x"], expected())
    assert "belongs to another user" in caplog.text


@pytest.mark.skipif(os.geteuid() != 0, reason="giving files to another user needs root")
def test_an_entry_of_the_trusted_group_of_a_setgid_cache_folder_is_used(tmp_path, monkeypatch):
    csv_path, cache, entry = built(tmp_path)
    group = os.getegid()
    os.chown(cache, -1, group)
    os.chmod(cache, 0o2775)
    for path in [entry, *entry.iterdir()]:
        os.chown(path, 12345, group)
    from nnconsole.engine.data import decode

    monkeypatch.setattr(decode, "_decode_image", lambda *a: pytest.fail("the team's entry was rebuilt"))
    np.testing.assert_array_equal(load_dataset(csv_path, cache_dir=cache).images["x"], expected())


def test_a_world_writable_array_is_not_trusted(tmp_path, caplog):
    csv_path, cache, entry = built(tmp_path)
    os.chmod(entry / "v0.npy", 0o666)
    np.testing.assert_array_equal(load_dataset(csv_path, cache_dir=cache).images["x"], expected())
    assert "writable by every user" in caplog.text


# ---- item 12 -----------------------------------------------------------------------------------------------
LOADER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {root!r})
    from nnconsole.engine.data.loading import load_dataset
    ds = load_dataset({csv!r}, cache_dir={cache!r})
    print("sum", int(ds.images["x"].astype("int64").sum()))
""")


def load_in_a_process(csv_path: Path, cache: Path) -> str:
    """Load in a child with a deadline: a hang fails the test instead of the test run."""
    code = LOADER.format(root=str(ROOT), csv=str(csv_path), cache=str(cache))
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("loading hung on a FIFO")
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.parametrize("name", ["meta.json", "v0.npy"])
def test_a_fifo_in_an_entry_is_refused_at_once_and_the_entry_rebuilt(tmp_path, name):
    csv_path, cache, entry = built(tmp_path)
    (entry / name).unlink()
    os.mkfifo(entry / name)
    out = load_in_a_process(csv_path, cache)
    assert out.split()[-1] == str(int(expected().astype(np.int64).sum()))
    assert (entry / name).is_file()


def test_a_fifo_as_a_build_folders_progress_file_is_refused_at_once(tmp_path):
    csv_path, cache, entry = built(tmp_path)
    key = json.loads((entry / "meta.json").read_text())["key"]
    shutil.rmtree(entry)
    partial = cache / f".{entry.name}.0123456789abcdef.partial"
    partial.mkdir()
    os.mkfifo(partial / "progress.json")
    assert key
    out = load_in_a_process(csv_path, cache)
    assert out.split()[-1] == str(int(expected().astype(np.int64).sum()))


# ---- item 17 -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("content", ["[]", '"text"', "5", '{"key": "KEY", "chunk": 256, "done": 3}',
                                     '{"key": "KEY", "chunk": 256, "done": [0, "a"], "digests": {}}',
                                     '{"key": "KEY", "chunk": 256, "done": [0], "digests": []}',
                                     '{"key": "KEY", "chunk": 256, "done": [0], "digests": {"0": 7}}'])
@pytest.mark.parametrize("folder_name", ["old fixed name", "build folder name"])
def test_a_leftover_progress_file_of_the_wrong_json_type_is_ignored(tmp_path, content, folder_name):
    csv_path, cache, entry = built(tmp_path)
    key = json.loads((entry / "meta.json").read_text())["key"]
    shutil.rmtree(entry)
    name = f".{entry.name}.partial" if folder_name == "old fixed name" else f".{entry.name}.00aa00aa00aa00aa.partial"
    (cache / name).mkdir()
    (cache / name / "progress.json").write_text(content.replace("KEY", key))
    np.testing.assert_array_equal(load_dataset(csv_path, cache_dir=cache).images["x"], expected())


@pytest.fixture
def read_only_mount():
    """Bind-mount a folder read-only onto itself (root only); unmounted afterwards."""
    mounted = []

    def make(folder: Path) -> None:
        if os.geteuid() != 0 or shutil.which("mount") is None:
            pytest.skip("needs root and mount for a folder that cannot be changed")
        for args in (["mount", "--bind", str(folder), str(folder)], ["mount", "-o", "remount,bind,ro", str(folder)]):
            out = subprocess.run(args, capture_output=True, text=True)
            if out.returncode != 0:
                if mounted:
                    subprocess.run(["umount", str(folder)])
                pytest.skip(f"cannot bind-mount here: {out.stderr.strip()}")
            mounted.append(folder)
    yield make
    for folder in set(mounted):
        # the loaded dataset may still map files under it (busy): detach it anyway, or the mount outlives the test
        if subprocess.run(["umount", str(folder)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(folder)], check=True)


def test_a_damaged_entry_that_cannot_be_removed_is_reported_and_the_data_still_loads(tmp_path, read_only_mount,
                                                                                     caplog):
    csv_path, cache, entry = built(tmp_path)
    meta = json.loads((entry / "meta.json").read_text())
    meta["size"] = 999
    (entry / "meta.json").write_text(json.dumps(meta))
    read_only_mount(entry)
    data = load_dataset(csv_path, cache_dir=cache)  # no ValueError traceback
    np.testing.assert_array_equal(data.images["x"], expected())
    assert f"dataset cache entry {entry} is damaged, stale or not trusted, and cannot be removed" in caplog.text
    assert "remove it by hand" in caplog.text
