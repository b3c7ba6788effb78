"""On a real X server with a 1366x768 screen (issue 28 items 3 and 6): the window opens inside the screen, and
a hand-commented project edited and saved in the app keeps its comments. Xvfb and Qt's xcb plugin run the
real app in a subprocess (no window manager: the available geometry is the whole screen)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.gui.support import ROOT, copy_digits

pytestmark = [pytest.mark.gui, pytest.mark.slow]

CHILD = r"""
import json, sys
from nnconsole.app.shell.application import create_application
app = create_application()
from nnconsole.app.config.commands import set_setting
from nnconsole.app.shell.main_window import MainWindow
window = MainWindow()
window.show()
window.files.open_path(sys.argv[1], ask_save=False)
for _ in range(50):
    app.processEvents()
set_setting(window.document, "config.max_epoch", 3)
window.document.save()
frame, available = window.frameGeometry(), window.screen().availableGeometry()
print(json.dumps({"frame": [frame.x(), frame.y(), frame.width(), frame.height()],
                  "available": [available.x(), available.y(), available.width(), available.height()]}))
window.document.undo_stack.setClean()
window.close()
"""


def start_xvfb(width: int, height: int):
    read_fd, write_fd = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(write_fd), "-screen", "0", f"{width}x{height}x24",
                             "-nolisten", "tcp"], pass_fds=(write_fd,), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    os.close(write_fd)
    with os.fdopen(read_fd) as pipe:
        number = pipe.readline().strip()
    return proc, f":{number}"


@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed (Debian: apt-get install -y xvfb)")
def test_a_1366x768_screen_fits_the_window_and_a_save_keeps_comments(tmp_path):
    project = copy_digits(str(tmp_path / "digits"))
    text = open(project).read().replace("datasets:\n", "# my own note\ndatasets:\n", 1)
    with open(project, "w") as fh:
        fh.write(text)
    xvfb, display = start_xvfb(1366, 768)
    home = tmp_path / "home"
    env = dict(os.environ, DISPLAY=display, QT_QPA_PLATFORM="xcb", XDG_CONFIG_HOME=str(home / "config"),
               XDG_DATA_HOME=str(home / "data"), XDG_CACHE_HOME=str(home / "cache"),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("WAYLAND_DISPLAY", None)
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, project], env=env, capture_output=True, text=True,
                              timeout=240, cwd=str(tmp_path))
    finally:
        xvfb.terminate()
        xvfb.wait(10)
    assert done.returncode == 0, done.stderr[-3000:]
    shown = json.loads(done.stdout.strip().splitlines()[-1])
    x, y, w, h = shown["frame"]
    ax, ay, aw, ah = shown["available"]
    assert (aw, ah) == (1366, 768)
    assert ax <= x and ay <= y and x + w <= ax + aw and y + h <= ay + ah, shown
    saved = open(project).read()
    assert "# my own note\ndatasets:\n" in saved and saved.startswith("# nnconsole project template")
    assert "max_epoch: 3" in saved
