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
from typing import Callable, Dict, List, Mapping, NamedTuple, Optional


class XcbPackages(NamedTuple):
    """The package holding one library, per distribution family."""
    debian: str
    fedora: str
    suse: str
    arch: str


# The xcb-util family the plugin links (objdump -p PySide6/Qt/plugins/platforms/libqxcb.so) that
# desktops may lack; libxcb and libX11 themselves come with every X11 desktop.
XCB_LIBRARIES: Dict[str, XcbPackages] = {
    "libxcb-cursor.so.0": XcbPackages("libxcb-cursor0", "xcb-util-cursor", "libxcb-cursor0", "xcb-util-cursor"),
    "libxcb-icccm.so.4": XcbPackages("libxcb-icccm4", "xcb-util-wm", "libxcb-icccm4", "xcb-util-wm"),
    "libxcb-keysyms.so.1": XcbPackages("libxcb-keysyms1", "xcb-util-keysyms", "libxcb-keysyms1",
                                       "xcb-util-keysyms"),
    "libxcb-image.so.0": XcbPackages("libxcb-image0", "xcb-util-image", "libxcb-image0", "xcb-util-image"),
    "libxcb-render-util.so.0": XcbPackages("libxcb-render-util0", "xcb-util-renderutil", "libxcb-render-util0",
                                           "xcb-util-renderutil"),
    "libxcb-util.so.1": XcbPackages("libxcb-util1", "xcb-util", "libxcb-util1", "xcb-util"),
    "libxkbcommon-x11.so.0": XcbPackages("libxkbcommon-x11-0", "libxkbcommon-x11", "libxkbcommon-x11-0",
                                         "libxkbcommon-x11"),
}
# family -> (name shown, install command)
INSTALLERS: Dict[str, tuple] = {
    "debian": ("Debian/Ubuntu", "sudo apt install"),
    "fedora": ("Fedora/RHEL", "sudo dnf install"),
    "suse": ("openSUSE/SLES", "sudo zypper install"),
    "arch": ("Arch/Manjaro", "sudo pacman -S"),
}
_FAMILY_OF_ID = {"debian": "debian", "ubuntu": "debian", "linuxmint": "debian", "pop": "debian",
                 "fedora": "fedora", "rhel": "fedora", "centos": "fedora", "rocky": "fedora",
                 "almalinux": "fedora", "opensuse": "suse", "opensuse-leap": "suse",
                 "opensuse-tumbleweed": "suse", "suse": "suse", "sles": "suse", "arch": "arch",
                 "manjaro": "arch", "endeavouros": "arch"}


def distro_family(os_release: str = "/etc/os-release") -> Optional[str]:
    """debian, fedora, suse or arch from os-release's ID and ID_LIKE; None when unknown or unreadable."""
    try:
        with open(os_release, encoding="utf-8") as handle:
            text = handle.read()
    except OSError:
        return None
    fields: Dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.partition("=")
        fields[key.strip()] = value.strip().strip('"').strip("'")
    for distro_id in [fields.get("ID", "")] + fields.get("ID_LIKE", "").split():
        family = _FAMILY_OF_ID.get(distro_id.lower())
        if family:
            return family
    return None


def install_command(missing: List[str], family: str) -> str:
    """The one command that installs ``missing`` (sonames) on ``family``."""
    packages = " ".join(getattr(XCB_LIBRARIES[soname], family) for soname in missing)
    return f"{INSTALLERS[family][1]} {packages}"


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


def missing_libraries_message(missing: List[str], family: Optional[str] = "auto") -> str:
    """What to install: the one command for ``family`` (default: this machine's distribution) when it is
    known, else one per family; and the ways around it."""
    if family == "auto":
        family = distro_family()
    families = [family] if family in INSTALLERS else list(INSTALLERS)
    commands = "\n".join(f"  {INSTALLERS[f][0] + ':':15} {install_command(missing, f)}" for f in families)
    return (f"nnconsole gui: Qt's X11 (xcb) platform plugin needs system libraries this machine lacks: "
            f"{', '.join(missing)}.\n"
            "Install them and start again:\n"
            f"{commands}\n"
            "In a Wayland session, QT_QPA_PLATFORM=wayland avoids them; without a desktop, train with: "
            "nnconsole train PROJECT")


def main() -> int:
    """``python -m nnconsole.app.shell.qt_libraries``: 0 when the GUI can start here, else 1 with the install
    command (scripts/run-example.sh runs it before opening the console)."""
    missing = missing_xcb_libraries()
    if missing:
        print(missing_libraries_message(missing), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
