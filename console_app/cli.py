"""The ``nnconsole gui [PROJECT]`` subcommand (registered into the engine's CLI).

Nothing here imports Qt at import time, so ``nnconsole train`` and the other commands stay
Qt-free; PySide6 is imported only when the GUI actually starts.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Callable, Mapping, Optional

from nnconsole.engine.errors import ExitCode

EXIT_NO_DISPLAY = ExitCode.BAD_INPUT  # no screen to open the window on: say so, like any refused input
# Qt platforms that draw without an X11 or Wayland server.
SELF_CONTAINED_PLATFORMS = ("offscreen", "minimal", "eglfs", "linuxfb", "vnc", "vkkhrdisplay")

NO_DISPLAY_MESSAGE = (
    "nnconsole gui: no display found (DISPLAY and WAYLAND_DISPLAY are not set), so the desktop console "
    "cannot open here.\n"
    "  Train without it:          nnconsole train PROJECT\n"
    "  Check a project:           nnconsole info PROJECT   /   nnconsole validate PROJECT\n"
    "  Or log in with a display (ssh -X, a desktop session), or set QT_QPA_PLATFORM=offscreen for "
    "a headless Qt.")


def has_display(environ: Optional[Mapping[str, str]] = None) -> bool:
    """True when a Qt window can be shown: an X11/Wayland display, or a self-contained Qt platform."""
    env = os.environ if environ is None else environ
    if not sys.platform.startswith("linux") and environ is None:
        return True
    platform = env.get("QT_QPA_PLATFORM", "").split(":")[0].strip().lower()
    if platform in SELF_CONTAINED_PLATFORMS:
        return True
    return bool(env.get("DISPLAY") or env.get("WAYLAND_DISPLAY"))


def cmd_gui(args: argparse.Namespace) -> int:
    if not has_display():
        print(NO_DISPLAY_MESSAGE, file=sys.stderr)
        return EXIT_NO_DISPLAY
    from nnconsole.app.shell.application import main

    return main([args.project] if args.project else [])


def register(add: Callable[..., argparse.ArgumentParser]) -> None:
    """Add ``gui`` to the engine's CLI (called by nnconsole.engine.cli.main's extension hook)."""
    p = add("gui", cmd_gui, "Open the desktop console (EDIT, DATASET, CONFIG, TRAINING and EVALUATION tabs).")
    p.add_argument("project", nargs="?", help="project YAML file to open")
