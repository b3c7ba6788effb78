"""Atomic saves keep the file's permissions: an existing file keeps its mode, a new one gets the umask's.

One writer (``nnconsole.engine.atomic``) serves every save: project files (GUI and CLI), autosaves, run files
(status, launch options, plan, checkpoints), parameters and models written by nnabla.
"""
from __future__ import annotations

import contextlib
import os
import stat

import pytest

from nnconsole.engine.atomic import atomic_write, write_via
from nnconsole.engine.project.io import save_project
from tests.support.cli import nnconsole, run_dir_from
from tests.support.projects import tabular_project
from nnconsole.engine.check.project_file import load_valid_project


@contextlib.contextmanager
def umask(mask: int):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def mode_of(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def write_with_nnabla_style_writer(path: str, data: bytes) -> None:
    """Like nnabla's save functions: the writer opens the temp path itself."""
    def writer(tmp: str) -> None:
        with open(tmp, "wb") as fh:
            fh.write(data)
    write_via(path, writer)


WRITERS = {"bytes": atomic_write, "via": write_with_nnabla_style_writer}


@pytest.mark.parametrize("writer", sorted(WRITERS))
@pytest.mark.parametrize("mask,expected", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_a_new_file_gets_the_umask_mode(tmp_path, writer, mask, expected):
    target = tmp_path / "new.json"
    with umask(mask):
        WRITERS[writer](str(target), b"{}")
    assert target.read_bytes() == b"{}"
    assert mode_of(target) == expected


@pytest.mark.parametrize("writer", sorted(WRITERS))
@pytest.mark.parametrize("mask", [0o022, 0o077])
@pytest.mark.parametrize("existing", [0o640, 0o604, 0o660])
def test_an_existing_file_keeps_its_mode_whatever_the_umask(tmp_path, writer, mask, existing):
    target = tmp_path / "kept.yaml"
    target.write_bytes(b"old")
    os.chmod(target, existing)
    with umask(mask):
        WRITERS[writer](str(target), b"new")
    assert target.read_bytes() == b"new"
    assert mode_of(target) == existing
    assert [p.name for p in tmp_path.iterdir()] == ["kept.yaml"]  # no temp file left


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="giving a file to another user needs root")
@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_root_saving_another_users_file_leaves_it_theirs(tmp_path, writer):
    target = tmp_path / "theirs.yaml"
    target.write_bytes(b"old")
    os.chown(target, 4321, 4322)
    os.chmod(target, 0o640)
    WRITERS[writer](str(target), b"new")
    st = os.stat(target)
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (4321, 4322, 0o640)


def test_a_failed_write_leaves_the_old_file_and_no_temp_file(tmp_path):
    target = tmp_path / "kept.h5"
    target.write_bytes(b"old")

    def failing(tmp: str) -> None:
        with open(tmp, "wb") as fh:
            fh.write(b"half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError):
        write_via(str(target), failing)
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["kept.h5"]


def test_a_gui_save_keeps_a_0644_project_file_0644_and_its_backup_too(tmp_path):
    with umask(0o022):
        path = tabular_project(str(tmp_path / "p"), epochs=1)
    os.chmod(path, 0o644)
    project = load_valid_project(path)
    project.config.max_epoch = 2
    with umask(0o077):  # e.g. a desktop session with a private umask: the file's own mode wins
        save_project(project, path)
    assert mode_of(path) == 0o644
    assert mode_of(path + ".bak") == 0o644
    assert load_valid_project(path).config.max_epoch == 2


def test_a_group_shared_project_keeps_its_group_mode(tmp_path):
    path = tabular_project(str(tmp_path / "p"), epochs=1)
    os.chmod(path, 0o640)
    save_project(load_valid_project(path), path)
    assert mode_of(path) == 0o640


@pytest.mark.slow
@pytest.mark.parametrize("mask", [0o022, 0o077])
def test_every_file_of_a_run_directory_has_the_umask_mode(tmp_path, mask):
    """Status, options, plan, checkpoints, parameters and models alike: no mix of 0600 and 0644."""
    with umask(0o022):
        project = tabular_project(str(tmp_path / "p"), n=32, epochs=1)
    with umask(mask):  # the CLI (and the workers) inherit it, as from a shell
        run_dir = run_dir_from(nnconsole(["train", project, "-q"]).stdout)
    expected = 0o666 & ~mask
    modes = {}
    for folder, _, names in os.walk(run_dir):
        for name in names:
            full = os.path.join(folder, name)
            modes[os.path.relpath(full, run_dir)] = oct(mode_of(full))
    assert "status.json" in modes and "checkpoints" in "".join(modes) and "model_final.nnp" in modes
    wrong = {name: m for name, m in modes.items() if m != oct(expected)}
    assert not wrong, f"expected {oct(expected)} everywhere: {wrong}"
