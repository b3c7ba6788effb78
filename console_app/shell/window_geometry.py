"""The main window's size and place: fitted to the screen it opens on, remembered per screen.

A window that opens larger than its screen puts its title-bar buttons and its bottom off screen (a
1366x768 laptop has about 1366x740 available below a panel). The first size is the preferred one cut
to the screen's available geometry (less room for the title bar and frame) and centred there; the last
geometry is kept per screen (its name and size), so a laptop and the monitor it is docked to each get
back their own, and a remembered geometry is fitted again in case the screen became smaller.
"""
from __future__ import annotations

import re
from typing import Optional

from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtGui import QGuiApplication, QScreen
from PySide6.QtWidgets import QWidget

from nnconsole.app.shell import settings as app_settings

PREFERRED = QSize(1400, 900)
FRAME = QSize(16, 48)  # what a window manager adds around the client area: borders and the title bar


def screen_key(screen: QScreen) -> str:
    """A settings-safe name for ``screen``: its name and size ("eDP-1 1366x768" -> "eDP-1_1366x768")."""
    size = screen.size()
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{screen.name() or 'screen'}_{size.width()}x{size.height()}")


def fitted(available: QRect, wanted: Optional[QRect] = None, preferred: QSize = PREFERRED) -> QRect:
    """The client geometry of a window on a screen whose available area is ``available``: ``wanted`` (or
    ``preferred`` centred) made small enough that the frame fits too, and moved inside."""
    room = QSize(max(320, available.width() - FRAME.width()), max(240, available.height() - FRAME.height()))
    size = (wanted.size() if wanted is not None and wanted.isValid() else preferred).boundedTo(room)
    if wanted is None or not wanted.isValid():
        left = available.x() + (available.width() - size.width()) // 2
        top = available.y() + (available.height() - size.height() - FRAME.height()) // 2 + FRAME.height() - 8
    else:
        left, top = wanted.x(), wanted.y()
    left = min(max(left, available.x() + FRAME.width() // 2),
               available.x() + available.width() - size.width() - FRAME.width() // 2)
    top = min(max(top, available.y() + FRAME.height() - 8), available.y() + available.height() - size.height() - 8)
    return QRect(left, top, size.width(), size.height())


def window_screen(window: QWidget) -> QScreen:
    """The screen the window is on (before it is shown: the primary screen)."""
    return window.screen() or QGuiApplication.primaryScreen()


def restore(window: QWidget, settings: app_settings.Settings) -> None:
    """Give ``window`` the geometry last used on its screen, fitted to that screen; a fitted default otherwise.

    The rectangle is kept as numbers, not ``saveGeometry``'s blob: Qt fits a blob to the screen the window
    is on when it is read, which is the point of keeping one per screen.
    """
    screen = window_screen(window)
    saved = settings.get(app_settings.window_geometry(screen_key(screen)))
    try:
        x, y, width, height, maximized = (int(v) for v in saved)
    except (TypeError, ValueError):
        window.setGeometry(fitted(screen.availableGeometry()))
        return
    window.setGeometry(fitted(screen.availableGeometry(), QRect(x, y, width, height)))
    if maximized:
        window.setWindowState(window.windowState() | Qt.WindowMaximized)


def save(window: QWidget, settings: app_settings.Settings) -> None:
    """Remember ``window``'s geometry (unmaximized) and whether it is maximized, for the screen it is on."""
    rect = window.normalGeometry() if window.isMaximized() else window.geometry()
    settings.set(app_settings.window_geometry(screen_key(window_screen(window))),
                 [rect.x(), rect.y(), rect.width(), rect.height(), int(window.isMaximized())])
