"""The main window fits the screen it opens on and remembers its geometry per screen (issue 28 item 6).

It opened at 1400x900 on a 1366x768 laptop, title-bar buttons and bottom off screen. One test asks the
real QScreen (the offscreen platform's screen is 800x600); the others give ``window_geometry`` a laptop
screen and a monitor by a stand-in object, since a test cannot plug in another screen.
"""
from __future__ import annotations

import pytest
from PySide6.QtCore import QRect, QSize

from nnconsole.app.shell import window_geometry
from nnconsole.app.shell.main_window import TABS

pytestmark = pytest.mark.gui

SHOTS = "/work/shots/shell"


class Screen:
    """What ``window_geometry`` asks of a QScreen: name, size, available geometry."""

    def __init__(self, name: str, width: int, height: int, panel: int = 28) -> None:
        self._name, self._size = name, QSize(width, height)
        self._available = QRect(0, panel, width, height - panel)

    def name(self) -> str:
        return self._name

    def size(self) -> QSize:
        return self._size

    def availableGeometry(self) -> QRect:  # noqa: N802 - QScreen's name
        return self._available


def inside_with_frame(client: QRect, available: QRect) -> bool:
    frame = client.adjusted(-window_geometry.FRAME.width() // 2, -(window_geometry.FRAME.height() - 8),
                            window_geometry.FRAME.width() // 2, 8)
    return available.contains(frame)


def test_the_first_window_fits_the_real_screen(make_window):
    window = make_window(tab_keys=tuple(t[0] for t in TABS))
    window.show()
    screen = window.screen()  # the real call: the offscreen platform's screen (800x800 here)
    available = screen.availableGeometry()
    room = QSize(available.width() - window_geometry.FRAME.width(),
                 available.height() - window_geometry.FRAME.height())
    # As large as the screen allows, no larger than the tabs' own minimum needs (about 1000x760)
    expected = window_geometry.PREFERRED.boundedTo(room).expandedTo(window.minimumSizeHint())
    assert window.size() == expected, (window.size(), available, window.minimumSizeHint())


def test_a_1366x768_laptop_gets_a_window_that_fits_with_its_title_bar(make_window, monkeypatch):
    laptop = Screen("eDP-1", 1366, 768)
    monkeypatch.setattr(window_geometry, "window_screen", lambda _w: laptop)
    window = make_window(tab_keys=tuple(t[0] for t in TABS))
    window.show()
    assert inside_with_frame(window.geometry(), laptop.availableGeometry()), window.geometry()
    hint = window.minimumSizeHint()  # every tab can be laid out that small
    assert hint.width() <= 1366 - window_geometry.FRAME.width() and hint.height() <= 740 - 48, hint
    window.grab().save(f"{SHOTS}/window_1366x768_after.png")


def test_geometry_is_remembered_per_screen(make_window, settings, monkeypatch):
    laptop, monitor = Screen("eDP-1", 1366, 768), Screen("HDMI-1", 1920, 1080)
    current = {"screen": monitor}
    monkeypatch.setattr(window_geometry, "window_screen", lambda _w: current["screen"])
    window = make_window()
    window.setGeometry(QRect(100, 120, 1500, 900))
    window_geometry.save(window, settings)
    current["screen"] = laptop
    window_geometry.restore(window, settings)  # nothing saved for the laptop: a fitted default
    assert inside_with_frame(window.geometry(), laptop.availableGeometry())
    window.setGeometry(QRect(40, 60, 1000, 600))
    window_geometry.save(window, settings)
    current["screen"] = monitor
    window_geometry.restore(window, settings)
    assert window.geometry().size() == QSize(1500, 900)
    current["screen"] = laptop
    window_geometry.restore(window, settings)
    assert window.geometry().size() == QSize(1000, 600)


def test_a_remembered_geometry_larger_than_the_screen_is_fitted():
    available = QRect(0, 28, 1366, 740)
    fitted = window_geometry.fitted(available, QRect(-50, 0, 1900, 1000))
    assert inside_with_frame(fitted, available) and fitted.width() == 1366 - window_geometry.FRAME.width()
