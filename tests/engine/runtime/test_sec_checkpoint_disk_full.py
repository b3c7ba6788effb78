"""Issue 25, item 15 (checkpoints): a full disk during a checkpoint is reported as "disk full" naming the folder,
before h5py writes anything (it crashed inside h5py), with nothing of that checkpoint left; and whatever an
interrupted checkpoint write left in checkpoints/ is removed once a later checkpoint succeeds, e.g. the first
of a resumed run, whatever its iteration."""
from __future__ import annotations

import errno
import os
import shutil
import subprocess

import numpy as np
import pytest

from nnconsole.engine.rundir import store as runs
from nnconsole.engine.runtime.checkpoint import CheckpointState, find_usable_checkpoint, save_checkpoint


@pytest.fixture
def model():
    import nnabla as nn
    import nnabla.solvers as S

    nn.clear_parameters()
    w = nn.parameter.get_parameter_or_create("w", (300, 1000), np.ones((300, 1000), np.float32))  # 1.2 MB
    solver = S.Adam()  # two more arrays of w's size: 2.4 MB of solver state
    solver.set_parameters({"w": w})
    yield [solver]
    nn.clear_parameters()


def state(iteration: int) -> CheckpointState:
    return CheckpointState(iteration=iteration, epoch=0, samples_into_epoch=iteration * 8, samples_seen=iteration * 8,
                           workers=1, elapsed=1.0)


@pytest.fixture
def small_disk(tmp_path):
    """run/checkpoints on a 2 MiB tmpfs: the parameters fit, the solver state does not."""
    folder = tmp_path / "run" / "checkpoints"
    folder.mkdir(parents=True)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small file system needs root")
    out = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(folder)], capture_output=True,
                         text=True)
    if out.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {out.stderr.strip()}")
    yield folder
    subprocess.run(["umount", str(folder)])


def test_a_checkpoint_on_a_full_disk_says_disk_full_and_leaves_nothing(tmp_path, small_disk, model):
    with pytest.raises(OSError) as info:
        save_checkpoint(str(tmp_path / "run"), state(10), model)
    assert info.value.errno == errno.ENOSPC
    assert f"disk full: checkpoint ckpt-00000010 cannot be written in {small_disk}" in str(info.value)
    assert os.listdir(small_disk) == []


def test_leftovers_of_an_interrupted_checkpoint_go_after_the_next_good_one(tmp_path, model):
    run_dir = str(tmp_path)
    save_checkpoint(run_dir, state(10), model)
    folder = runs.checkpoint_dir(run_dir)
    leftovers = [".ckpt-00000020.h5.4242.0badc0de.tmp.h5", "ckpt-00000020.h5", ".ckpt-00000020.1a2b3c4d.reserve",
                 ".ckpt-00000020.solver0.h5.4242.0badc0de.tmp.h5"]
    for name in leftovers:  # a crash (SIGSEGV, kill -9, power loss) in the middle of checkpoint 20
        with open(os.path.join(folder, name), "wb") as fh:
            fh.write(b"half written")
    assert find_usable_checkpoint(run_dir, warn=pytest.fail).endswith("ckpt-00000010.json")
    save_checkpoint(run_dir, state(20), model)  # the resumed run reaches iteration 20 again
    names = sorted(os.listdir(folder))
    assert names == ["ckpt-00000010.h5", "ckpt-00000010.json", "ckpt-00000010.solver0.h5", "ckpt-00000020.h5",
                     "ckpt-00000020.json", "ckpt-00000020.solver0.h5"], names
    assert find_usable_checkpoint(run_dir, warn=pytest.fail).endswith("ckpt-00000020.json")
