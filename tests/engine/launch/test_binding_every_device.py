"""Core binding is the same for every device (issue 27 item 4).

Open MPI 5 binds each rank to one core unless told otherwise; a GPU rank's main thread, prefetch thread
and NCCL's proxy threads would then share that core. The command line ``launch`` really starts is
captured (``subprocess.Popen`` refused after recording it) for ``--device cpu``, ``cuda`` and ``auto``.
"""
from __future__ import annotations

import pytest

from nnconsole.engine.launch import launcher as launch
from nnconsole.engine.launch.launcher import LaunchRequest, worker_command
from tests.support.projects import tabular_project


class _Started(Exception):
    pass


def _launched_command(tmp_path, monkeypatch, device):
    path = tabular_project(str(tmp_path / device), n=32, batch=4, epochs=1, workers=2)
    seen = []

    def refuse(cmd, *args, **kwargs):
        seen.append(list(cmd))
        raise _Started()

    monkeypatch.setattr(launch.subprocess, "Popen", refuse)
    monkeypatch.setattr(launch, "gpu_count", lambda: 2)  # a GPU machine, as far as the plan is concerned
    with pytest.raises(_Started):
        launch.launch(LaunchRequest(project_path=path, workers=2, device=device, oversubscribe=True))
    [cmd] = seen
    return cmd


def _binding(cmd):
    return [cmd[i + 1] for i, arg in enumerate(cmd) if arg == "--bind-to"]


def test_every_device_starts_unbound_ranks(tmp_path, monkeypatch):
    commands = {device: _launched_command(tmp_path, monkeypatch, device) for device in ("cpu", "cuda", "auto")}
    for device, cmd in commands.items():
        assert cmd[0].endswith("mpiexec"), cmd
        assert _binding(cmd) == ["none"], (device, cmd)
        assert cmd.index("--bind-to") < cmd.index("nnconsole.engine.train.worker")  # an mpiexec option
    assert _binding(commands["cuda"]) == _binding(commands["cpu"]) == _binding(commands["auto"])


def test_a_binding_the_user_asked_for_is_kept():
    cmd = worker_command("/tmp/run", 2, extra=["--bind-to", "socket"])
    assert _binding(cmd) == ["socket"], cmd  # one --bind-to: mpiexec refuses two
