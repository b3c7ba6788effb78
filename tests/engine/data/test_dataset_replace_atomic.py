"""``dataset create --force`` replaces an existing dataset in one swap (issue 25 item 7): killed at any step
after the conversion (kill -9: no cleanup runs), the output folder holds the whole old dataset or the whole
new one, never new images under the old CSVs; the next run finishes the job and leaves nothing behind."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from tests.support.paths import ROOT

# Runs in a clean interpreter: for k = 0, 1, ... a forked child creates the new dataset over a fresh copy of
# the old one and dies (os._exit: no handler, no finally) just before its k-th file-system change after the
# conversion; the parent records what the output folder then holds, reruns the create to the end and records
# what is left beside it. It stops at the first k the child survives.
DRIVER = r"""
import hashlib, json, os, shutil, sys
from nnconsole.engine.data.create import writer
from nnconsole.engine.data.create.writer import CreateOptions, create_dataset

root, old_template, src = sys.argv[1:4]

def snapshot(folder):
    found = {}
    for here, dirs, files in os.walk(folder):
        for name in files:
            path = os.path.join(here, name)
            found[os.path.relpath(path, folder)] = hashlib.sha256(open(path, "rb").read()).hexdigest()
    return found

def options(out):
    return CreateOptions(src, out, 8, 8, channels=1, workers=1, force=True, shuffle=False)

CHANGES = ["replace", "rename", "link", "unlink", "rmdir", "mkdir", "symlink"]

def die_at(k):
    count = [0]
    converted = [False]
    def step(fn):
        def wrapped(*args, **kwargs):
            if converted[0]:
                if count[0] == k:
                    os._exit(9)
                count[0] += 1
            return fn(*args, **kwargs)
        return wrapped
    for name in CHANGES:
        setattr(os, name, step(getattr(os, name)))
    swap = sys.modules.get("nnconsole.engine.data.create.swap")
    if swap is not None:
        swap.exchange = step(swap.exchange)
    real_convert = writer.convert_all
    def convert_all(*args, **kwargs):
        result = real_convert(*args, **kwargs)
        converted[0] = True
        return result
    writer.convert_all = convert_all

new_dir = os.path.join(root, "reference", "out")
shutil.copytree(old_template, new_dir, symlinks=True)
create_dataset(options(new_dir))
new, old = snapshot(new_dir), snapshot(old_template)
results = []
for k in range(200):
    place = os.path.join(root, f"k{k}")
    os.makedirs(place)
    out = os.path.join(place, "out")
    shutil.copytree(old_template, out, symlinks=True)
    pid = os.fork()
    if pid == 0:
        die_at(k)
        create_dataset(options(out))
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    killed = os.WEXITSTATUS(status) == 9
    now = snapshot(out) if os.path.isdir(out) else None
    state = "old" if now == old else "new" if now == new else "missing" if now is None else "mixed"
    create_dataset(options(out))
    results.append({"k": k, "killed": killed, "state": state, "after_rerun": snapshot(out) == new,
                    "left_beside": sorted(os.listdir(place))})
    if not killed:
        break
print(json.dumps(results))
"""


def _images(folder, classes, size, seed):
    rng = np.random.default_rng(seed)
    for name in classes:
        (folder / name).mkdir(parents=True, exist_ok=True)
        for i in range(3):
            Image.fromarray(rng.integers(0, 256, size, dtype=np.uint8), "L").save(folder / name / f"{i}.png")


@pytest.mark.slow
def test_a_kill_at_any_step_of_the_replacement_leaves_one_whole_dataset(tmp_path):
    from nnconsole.engine.data.create.writer import CreateOptions, create_dataset

    _images(tmp_path / "old_src", ["cat", "dog"], (5, 5), 1)
    _images(tmp_path / "src", ["cat", "dog"], (9, 9), 2)  # same file names, other pixels
    old = tmp_path / "old"
    create_dataset(CreateOptions(str(tmp_path / "old_src"), str(old), 8, 8, channels=1, workers=1, shuffle=False))
    (old / "keep.txt").write_text("the user's own file")  # carried into the new dataset, never lost
    (old / "cat" / "notes.md").write_text("and a note in a class folder")
    work = tmp_path / "work"
    work.mkdir()
    driver = subprocess.run([sys.executable, "-c", DRIVER, str(work), str(old), str(tmp_path / "src")],
                            capture_output=True, text=True, timeout=300, cwd=ROOT,
                            env=dict(os.environ, PYTHONPATH=ROOT))
    assert driver.returncode == 0, driver.stderr
    results = json.loads(driver.stdout.strip().splitlines()[-1])
    assert len(results) > 3 and results[-1]["killed"] is False
    for r in results:
        assert r["state"] in ("old", "new"), f"killed before file-system change {r['k']}: the dataset is {r['state']}"
        assert r["after_rerun"] and r["left_beside"] == ["out"], r
    assert {r["state"] for r in results} == {"old", "new"}
    reference = work / "reference" / "out"
    assert (reference / "keep.txt").read_text() == "the user's own file"
    assert (reference / "cat" / "notes.md").read_text() == "and a note in a class folder"
    assert hashlib.sha256((reference / "cat" / "0.png").read_bytes()).digest() != \
        hashlib.sha256((old / "cat" / "0.png").read_bytes()).digest()


def test_force_through_a_link_replaces_the_linked_folder_and_keeps_the_link(tmp_path):
    from nnconsole.engine.data.create.writer import CreateOptions, create_dataset

    _images(tmp_path / "src", ["cat"], (9, 9), 2)
    real = tmp_path / "disk" / "data"
    real.mkdir(parents=True)
    (real / "keep.txt").write_text("mine")
    os.symlink(real, tmp_path / "out")
    create_dataset(CreateOptions(str(tmp_path / "src"), str(tmp_path / "out"), 8, 8, workers=1, force=True))
    assert os.path.islink(tmp_path / "out")
    assert sorted(os.listdir(real)) == ["cat", "keep.txt", "labels.txt", "train.csv"]
    assert sorted(os.listdir(tmp_path / "disk")) == ["data"]  # nothing left beside the replaced folder


def test_what_cannot_be_carried_keeps_the_old_folder_in_sight(tmp_path):
    import socket

    from nnconsole.engine.data.create.writer import CreateOptions, create_dataset

    _images(tmp_path / "src", ["cat"], (9, 9), 2)
    (tmp_path / "out").mkdir()
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(tmp_path / "out" / "s"))
        result = create_dataset(CreateOptions(str(tmp_path / "src"), str(tmp_path / "out"), 8, 8, workers=1,
                                              force=True))
    finally:
        sock.close()
    kept = [n for n in os.listdir(tmp_path) if n.startswith("out.replaced-")]
    assert len(kept) == 1 and os.listdir(tmp_path / kept[0]) == ["s"]
    assert any("could not be carried over" in n for n in result.notes)
    assert sorted(os.listdir(tmp_path / "out")) == ["cat", "labels.txt", "train.csv"]
