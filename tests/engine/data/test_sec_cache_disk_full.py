"""Issue 25, item 15 (cache): a full disk during a cache build is reported ("disk full", naming the folder) and
the data still loads; the build never writes through a memory map of a sparse file, which killed the decoding
process with SIGBUS when the disk filled. Uses a real 1 MiB tmpfs (root only)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

ROOT = Path(__file__).resolve().parents[3]
N, SIZE = 40, 192  # 40 x 192 x 192 bytes = 1.5 MB: more than the file system holds


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB tmpfs at tmp_path/disk, unmounted afterwards."""
    folder = tmp_path / "disk"
    folder.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small file system needs root")
    out = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)], capture_output=True,
                         text=True)
    if out.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {out.stderr.strip()}")
    yield folder
    subprocess.run(["umount", str(folder)])


LOADER = textwrap.dedent("""
    import logging, sys
    logging.basicConfig(level=logging.WARNING)
    sys.path.insert(0, {root!r})
    from nnconsole.engine.data import cache_build
    from nnconsole.engine.data.loading import load_dataset
    cache_build.POOL_MIN_IMAGES, cache_build.CHUNK = 1, 4  # with 2 workers: the decode processes write
    # a budget larger than the disk (the default, 80% of its free space, would decode on the fly instead)
    ds = load_dataset({csv!r}, cache_dir={cache!r}, build_workers={workers}, cache_budget=1.0)
    print("sum", int(ds.images["x"].astype("int64").sum()))
""")


@pytest.mark.parametrize("workers", [1, 2])
def test_a_full_disk_during_a_cache_build_is_reported_and_the_data_still_loads(tmp_path, small_disk, workers):
    folder = tmp_path / "ds"
    folder.mkdir()
    rng = np.random.default_rng(0)
    images = [rng.integers(0, 256, (SIZE, SIZE), dtype=np.uint8) for _ in range(N)]
    rows = ["x:image,y:label"]
    for i, pixels in enumerate(images):
        Image.fromarray(pixels).save(folder / f"{i}.png")
        rows.append(f"{i}.png,0")
    (folder / "train.csv").write_text("\n".join(rows) + "\n")
    code = LOADER.format(root=str(ROOT), csv=str(folder / "train.csv"), cache=str(small_disk), workers=workers)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, f"exit {out.returncode} (SIGBUS is -7): {out.stderr}"
    assert out.stdout.split()[-1] == str(sum(int(p.astype(np.int64).sum()) for p in images))
    assert f"disk full: the dataset cache in {small_disk} needs" in out.stderr, out.stderr
    assert "decoded into memory" in out.stderr
    assert [p.name for p in small_disk.iterdir() if not p.name.endswith("lock")] == [], "the failed build stayed"
