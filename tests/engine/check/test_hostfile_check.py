"""Issue 25 item 22: ``validate`` checks ``multi_gpu.hostfile`` as ``train`` reads it (relative to the project's
folder): a missing file, a folder, a FIFO and a file that is not a hostfile are located problems, before a run."""
from __future__ import annotations

import os

import pytest
import yaml

from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.project.errors import ProjectError
from tests.support.projects import tabular_project


def _project(tmp_path, hostfile: str) -> str:
    path = tabular_project(str(tmp_path / "p"), workers=2)
    data = yaml.safe_load(open(path))
    data["multi_gpu"]["hostfile"] = hostfile
    yaml.safe_dump(data, open(path, "w"))
    return path


def _refused(path: str) -> str:
    with pytest.raises(ProjectError) as info:
        load_valid_project(path)
    text = str(info.value)
    assert "multi_gpu.hostfile" in text and path in text, text
    return text


def test_a_missing_hostfile_is_reported(tmp_path):
    assert "hostfile not found" in _refused(_project(tmp_path, "hosts.txt"))


def test_a_folder_or_fifo_is_not_a_hostfile(tmp_path):
    path = _project(tmp_path, "hosts.txt")
    os.mkdir(tmp_path / "p" / "hosts.txt")
    assert "not a regular file" in _refused(path)
    os.rmdir(tmp_path / "p" / "hosts.txt")
    os.mkfifo(tmp_path / "p" / "hosts.txt")
    assert "not a regular file" in _refused(path)  # and it did not block on the FIFO


@pytest.mark.parametrize("content", [b"node1 slots=2\n-oProxyCommand=touch /tmp/x\n", b"\x89PNG\r\n\x1a\n\x00\xff",
                                     b"node1 slots=lots\n"])
def test_a_file_that_is_not_a_hostfile_is_reported(tmp_path, content):
    path = _project(tmp_path, "hosts.txt")
    (tmp_path / "p" / "hosts.txt").write_bytes(content)
    _refused(path)


def test_a_good_hostfile_passes(tmp_path):
    path = _project(tmp_path, "hosts.txt")
    (tmp_path / "p" / "hosts.txt").write_text("# rack 1\nnode1 slots=1\nnode2 slots=1\n")
    assert load_valid_project(path).multi_gpu.hostfile == "hosts.txt"


def test_the_run_copy_names_the_hostfile_absolutely(tmp_path):
    """A resume loads the run's project.yaml from the run directory: a relative hostfile would be missing there."""
    from nnconsole.engine.launch.launcher import resolved_copy
    path = _project(tmp_path, "hosts.txt")
    (tmp_path / "p" / "hosts.txt").write_text("node1 slots=2\n")
    project = load_valid_project(path)
    assert resolved_copy(project).multi_gpu.hostfile == str(tmp_path / "p" / "hosts.txt")


def test_validate_cli_exits_2_naming_the_hostfile(tmp_path):
    from tests.support.cli import nnconsole
    path = _project(tmp_path, "hosts.txt")
    out = nnconsole(["validate", path], check=False)
    assert out.returncode == 2 and "multi_gpu.hostfile" in out.stderr and "Traceback" not in out.stderr
