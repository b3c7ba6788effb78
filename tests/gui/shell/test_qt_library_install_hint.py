"""The install command for Qt's missing system libraries names the user's distribution's package manager.

scripts/run-example.sh runs ``python -m nnconsole.app.shell.qt_libraries`` before opening the console, so a
fresh desktop gets one command to paste (apt, dnf, zypper or pacman) instead of Qt's abort.
"""
import os
import subprocess
import sys

import pytest

from nnconsole.app.shell import qt_libraries

OS_RELEASES = {
    "debian": ('ID=debian\nVERSION_ID="12"\n', "sudo apt install libxcb-cursor0 libxcb-icccm4"),
    "ubuntu": ('ID=ubuntu\nID_LIKE=debian\nVERSION_ID="24.04"\n', "sudo apt install libxcb-cursor0 libxcb-icccm4"),
    "fedora": ('ID=fedora\nVERSION_ID=40\n', "sudo dnf install xcb-util-cursor xcb-util-wm"),
    "rocky": ('ID="rocky"\nID_LIKE="rhel centos fedora"\n', "sudo dnf install xcb-util-cursor xcb-util-wm"),
    "opensuse": ('ID="opensuse-tumbleweed"\nID_LIKE="opensuse suse"\n',
                 "sudo zypper install libxcb-cursor0 libxcb-icccm4"),
    "arch": ("ID=arch\n", "sudo pacman -S xcb-util-cursor xcb-util-wm"),
    "manjaro": ("ID=manjaro\nID_LIKE=arch\n", "sudo pacman -S xcb-util-cursor xcb-util-wm"),
}
MISSING = ["libxcb-cursor.so.0", "libxcb-icccm.so.4"]


@pytest.mark.parametrize("distro", sorted(OS_RELEASES))
def test_one_install_command_for_the_detected_distribution(tmp_path, distro):
    text, command = OS_RELEASES[distro]
    (tmp_path / "os-release").write_text(text)
    family = qt_libraries.distro_family(str(tmp_path / "os-release"))
    message = qt_libraries.missing_libraries_message(MISSING, family)
    assert command in message
    others = [cmd for _name, cmd in qt_libraries.INSTALLERS.values() if not command.startswith(cmd)]
    assert not any(other in message for other in others), message


def test_unknown_or_unreadable_distribution_lists_every_family(tmp_path):
    (tmp_path / "os-release").write_text("ID=gentoo\n")
    assert qt_libraries.distro_family(str(tmp_path / "os-release")) is None
    assert qt_libraries.distro_family(str(tmp_path / "missing")) is None
    message = qt_libraries.missing_libraries_message(MISSING, None)
    for _name, command in qt_libraries.INSTALLERS.values():
        assert command in message


def test_every_library_has_a_package_in_every_family():
    for packages in qt_libraries.XCB_LIBRARIES.values():
        assert all(packages) and len(packages) == len(qt_libraries.INSTALLERS)


def test_this_machine_is_recognised():
    """The real /etc/os-release of the test machine (Debian in CI) maps to a family."""
    if not os.path.exists("/etc/os-release"):
        pytest.skip("no /etc/os-release here")
    assert qt_libraries.distro_family() in qt_libraries.INSTALLERS


def test_module_entry_point_checks_before_the_gui(tmp_path):
    """The entry run-example.sh calls: no Qt import, exit 0 where nothing is missing (offscreen needs no
    xcb library), exit 1 naming the library when one cannot load."""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    ok = subprocess.run([sys.executable, "-m", "nnconsole.app.shell.qt_libraries"], env=env,
                        capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    probe = ("import sys; from nnconsole.app.shell import qt_libraries as q; "
             "q.library_loads = lambda soname: soname != 'libxcb-cursor.so.0'; "
             "q.missing_xcb_libraries.__defaults__ = (None, q.library_loads); "
             "rc = q.main(); print('PySide6' in sys.modules); sys.exit(rc)")
    bad = subprocess.run([sys.executable, "-c", probe], env=dict(os.environ, QT_QPA_PLATFORM="xcb"),
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1
    assert "libxcb-cursor.so.0" in bad.stderr and "install" in bad.stderr
    assert bad.stdout.strip() == "False"
