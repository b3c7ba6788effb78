"""``nnconsole gui`` on an X11 desktop without the xcb libraries Qt's xcb plugin needs (issue 13
item 23): a message naming the packages to install and exit code 2, before any QApplication exists.

The missing library is simulated where the operating system answers: ``ctypes.CDLL`` (dlopen) and
``ctypes.util.find_library`` refuse the library's name, as they do on a machine without it.
"""
from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import os

import pytest

import nnconsole.app.shell.application
from nnconsole.app import cli

XCB_NAMES = ("libxcb-cursor.so.0", "libxcb-icccm.so.4", "libxcb-keysyms.so.1", "libxcb-image.so.0",
             "libxcb-render-util.so.0", "libxcb-util.so.1", "libxkbcommon-x11.so.0")


class QApplicationCreated(Exception):
    pass


@pytest.fixture
def x11_desktop(monkeypatch):
    """An X11 session (DISPLAY set, no Wayland, QT_QPA_PLATFORM unset) where a QApplication must not
    be created: creating one raises QApplicationCreated."""
    monkeypatch.setenv("DISPLAY", ":0")
    for name in ("QT_QPA_PLATFORM", "WAYLAND_DISPLAY", "XDG_SESSION_TYPE"):
        monkeypatch.delenv(name, raising=False)

    def created(*_args, **_kwargs):
        raise QApplicationCreated()

    monkeypatch.setattr(nnconsole.app.shell.application, "create_application", created)
    # An unknown distribution: the message lists every family's command (test_qt_library_install_hint
    # covers the one-command case per distribution).
    from nnconsole.app.shell import qt_libraries
    monkeypatch.setattr(qt_libraries, "distro_family", lambda *_args: None)


def simulate_libraries(monkeypatch, missing):
    """dlopen and find_library fail for the names in ``missing`` and succeed for the other xcb ones
    (whatever this machine has installed)."""
    real_cdll, real_find = ctypes.CDLL, ctypes.util.find_library

    def cdll(name, *args, **kwargs):
        base = os.path.basename(str(name))
        if base in missing:
            raise OSError(f"{name}: cannot open shared object file: No such file or directory")
        if base in XCB_NAMES:
            return object()
        return real_cdll(name, *args, **kwargs)

    def find_library(name):
        if any(m.startswith(f"lib{name}.so") for m in missing):
            return None
        if any(x.startswith(f"lib{name}.so") for x in XCB_NAMES):
            return f"lib{name}.so"
        return real_find(name)

    monkeypatch.setattr(ctypes, "CDLL", cdll)
    monkeypatch.setattr(ctypes.util, "find_library", find_library)


def test_missing_xcb_cursor_names_the_package_and_exits_2(x11_desktop, monkeypatch, capsys):
    simulate_libraries(monkeypatch, missing={"libxcb-cursor.so.0"})
    assert nnconsole.app.shell.application.main([]) == 2
    err = capsys.readouterr().err
    assert "libxcb-cursor.so.0" in err
    assert "sudo apt install libxcb-cursor0" in err
    assert "sudo dnf install xcb-util-cursor" in err
    assert "Traceback" not in err


def test_nnconsole_gui_command_stops_the_same_way(x11_desktop, monkeypatch, capsys):
    simulate_libraries(monkeypatch, missing={"libxcb-cursor.so.0", "libxcb-icccm.so.4"})
    assert cli.cmd_gui(argparse.Namespace(project="some/project.yaml")) == 2
    err = capsys.readouterr().err
    assert "sudo apt install libxcb-cursor0 libxcb-icccm4" in err
    assert "xcb-util-cursor xcb-util-wm" in err


def test_all_libraries_present_starts_the_app(x11_desktop, monkeypatch):
    simulate_libraries(monkeypatch, missing=set())
    with pytest.raises(QApplicationCreated):
        nnconsole.app.shell.application.main([])


@pytest.mark.parametrize("env", [
    {"QT_QPA_PLATFORM": "offscreen", "DISPLAY": ":0"},
    {"QT_QPA_PLATFORM": "wayland", "DISPLAY": ":0"},
    {"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"},
    {"XDG_SESSION_TYPE": "wayland", "DISPLAY": ":0"},
])
def test_platforms_without_xcb_are_not_held_back(x11_desktop, monkeypatch, env):
    """Qt uses its wayland or offscreen plugin here, which needs none of the xcb libraries."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    simulate_libraries(monkeypatch, missing=set(XCB_NAMES))
    with pytest.raises(QApplicationCreated):
        nnconsole.app.shell.application.main([])


def test_an_explicit_xcb_platform_is_checked(x11_desktop, monkeypatch, capsys):
    monkeypatch.setenv("QT_QPA_PLATFORM", "xcb")
    monkeypatch.setenv("WAYLAND_DISPLAY", "wayland-0")
    simulate_libraries(monkeypatch, missing={"libxcb-cursor.so.0"})
    assert nnconsole.app.shell.application.main([]) == 2
    assert "libxcb-cursor0" in capsys.readouterr().err


def test_library_loads_asks_the_dynamic_loader():
    from nnconsole.app.shell import qt_libraries

    assert qt_libraries.library_loads("libc.so.6")
    assert not qt_libraries.library_loads("libnnconsole-no-such-library.so.0")
