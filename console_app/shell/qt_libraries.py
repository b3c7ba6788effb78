"""The system libraries Qt's X11 (xcb) platform plugin needs, checked before any QApplication exists.

Without one of them Qt aborts with "no Qt platform plugin could be initialized" (and a core dump),
which tells a new user nothing: a fresh Debian/Ubuntu desktop lacks ``libxcb-cursor0``, needed by
Qt 6.5 and later. Checking first lets ``nnconsole gui`` name the packages to install. Nothing here
imports Qt.
"""
from __future__ import annotations

import ctypes
import importlib.util
import os
import sys
from typing import Callable, List, Mapping, Optional

# The xcb-util family the plugin links (objdump -p PySide6/Qt/plugins/platforms/libqxcb.so) that
# desktops may lack; libxcb and libX11 themselves come with every X11 desktop.
# soname -> (Debian/Ubuntu package, Fedora package)
XCB_LIBRARIES = {
    "libxcb-cursor.so.0": ("libxcb-cursor0", "xcb-util-cursor"),
    "libxcb-icccm.so.4": ("libxcb-icccm4", "xcb-util-wm"),
    "libxcb-keysyms.so.1": ("libxcb-keysyms1", "xcb-util-keysyms"),
    "libxcb-image.so.0": ("libxcb-image0", "xcb-util-image"),
    "libxcb-render-util.so.0": ("libxcb-render-util0", "xcb-util-renderutil"),
    "libxcb-util.so.1": ("libxcb-util1", "xcb-util"),
    "libxkbcommon-x11.so.0": ("libxkbcommon-x11-0", "libxkbcommon-x11"),
}


def uses_xcb(environ: Optional[Mapping[str, str]] = None) -> bool:
    """Whether Qt will start its xcb plugin: QT_QPA_PLATFORM names xcb first, or it is unset in an X11
    session (in a Wayland session Qt tries its wayland plugin first, which needs none of these)."""
    env = os.environ if environ is None else environ
    if environ is None and not sys.platform.startswith("linux"):
        return False
    requested = env.get("QT_QPA_PLATFORM", "").strip()
    if requested:
        first = requested.split(";")[0].split(":")[0].strip().lower()
        return first == "xcb"
    if env.get("WAYLAND_DISPLAY") or env.get("XDG_SESSION_TYPE", "").strip().lower() == "wayland":
        return False
    return bool(env.get("DISPLAY"))


def _bundled_qt_lib() -> Optional[str]:
    """PySide6's own Qt/lib folder (the plugin's RUNPATH looks there first), found without importing Qt."""
    spec = importlib.util.find_spec("PySide6")
    locations = list(spec.submodule_search_locations or []) if spec else []
    return os.path.join(locations[0], "Qt", "lib") if locations else None


def library_loads(soname: str) -> bool:
    """Whether the dynamic loader finds ``soname`` as the plugin would: bundled with PySide6 or on the
    system's library path (dlopen, the same search Qt's plugin loader does)."""
    bundled = _bundled_qt_lib()
    if bundled and os.path.exists(os.path.join(bundled, soname)):
        return True
    try:
        ctypes.CDLL(soname)
    except OSError:
        return False
    return True


def missing_xcb_libraries(environ: Optional[Mapping[str, str]] = None,
                          loads: Callable[[str], bool] = library_loads) -> List[str]:
    """The sonames of XCB_LIBRARIES that cannot be loaded, when Qt will use xcb; else []."""
    if not uses_xcb(environ):
        return []
    return [soname for soname in XCB_LIBRARIES if not loads(soname)]


def missing_libraries_message(missing: List[str]) -> str:
    """What to install, for Debian/Ubuntu and Fedora, and the ways around it."""
    debian = " ".join(XCB_LIBRARIES[s][0] for s in missing)
    fedora = " ".join(XCB_LIBRARIES[s][1] for s in missing)
    return (f"nnconsole gui: Qt's X11 (xcb) platform plugin needs system libraries this machine lacks: "
            f"{', '.join(missing)}.\n"
            "Install them and start again:\n"
            f"  Debian/Ubuntu:  sudo apt install {debian}\n"
            f"  Fedora:         sudo dnf install {fedora}\n"
            "In a Wayland session, QT_QPA_PLATFORM=wayland avoids them; without a desktop, train with: "
            "nnconsole train PROJECT")
