"""``nnconsole gui``: registered in the engine CLI without importing Qt, and a clear exit 2 when
there is no display."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from nnconsole.app import cli
from tests.support.paths import ROOT


@pytest.mark.parametrize("env, expected", [
    ({}, False),
    ({"DISPLAY": ":0"}, True),
    ({"WAYLAND_DISPLAY": "wayland-0"}, True),
    ({"QT_QPA_PLATFORM": "offscreen"}, True),
    ({"QT_QPA_PLATFORM": "minimal"}, True),
    ({"QT_QPA_PLATFORM": "xcb"}, False),
])
def test_has_display(env, expected):
    assert cli.has_display(env) is expected


def _headless_env():
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env["PYTHONPATH"] = ROOT
    return env


def test_gui_without_a_display_points_to_the_headless_command():
    result = subprocess.run([sys.executable, "-m", "nnconsole", "gui", "some/project.yaml"], cwd=ROOT,
                            env=_headless_env(), capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "no display" in result.stderr and "nnconsole train PROJECT" in result.stderr


def test_the_engine_cli_stays_qt_free():
    code = ("import sys, nnconsole.cli as c; p = c.build_parser(); a = p.parse_args(['gui', 'x.yaml']); "
            "assert a.project == 'x.yaml' and a.func.__module__ == 'nnconsole.app.cli'; "
            "assert not [m for m in sys.modules if m.startswith('PySide6')], 'Qt was imported'; print('ok')")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_headless_env(), capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_gui_command_starts_the_app_with_the_project(monkeypatch):
    import argparse

    import nnconsole.app.shell.application

    started = []
    monkeypatch.setattr(cli, "has_display", lambda environ=None: True)
    monkeypatch.setattr(nnconsole.app.shell.application, "main", lambda argv: started.append(argv) or 0)
    assert cli.cmd_gui(argparse.Namespace(project="p/project.yaml")) == 0
    assert cli.cmd_gui(argparse.Namespace(project=None)) == 0
    assert started == [["p/project.yaml"], []]
