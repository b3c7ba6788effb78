"""Every desktop-app setting declared once (key, type, default, doc) over QSettings.

Views read and write settings only through ``Settings.get``/``Settings.set`` with one of the
``Setting`` constants below, so a key's type and default live in one place. Recent projects drop
paths that no longer exist when they are read.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, List, Optional

from PySide6.QtCore import QByteArray, QSettings

ORGANIZATION = "nnconsole"
APPLICATION = "nnconsole"


@dataclass(frozen=True)
class Setting:
    """One persistent setting: its QSettings key, Python type, default value and meaning."""

    key: str
    type: type
    default: Any
    doc: str


def window_geometry(screen: str) -> Setting:
    """The main window's last size and position on the screen named ``screen`` (``window_geometry.screen_key``)."""
    return Setting(f"window/geometry_on/{screen}", list, [],
                   "main window x, y, width, height and maximized (0/1) on one screen")


WINDOW_STATE = Setting("window/state", QByteArray, QByteArray(), "main window toolbars and docks")
CURRENT_TAB = Setting("window/current_tab", int, 0, "the tab shown when the window opens")
EDIT_SPLITTERS = Setting("edit/splitters", list, [], "EDIT tab splitter states (palette | canvas | panel)")
RIGHT_PANEL_TAB = Setting("edit/right_panel_tab", int, 0, "EDIT tab side panel: 0 properties, 1 statistics")
RECENT_PROJECTS = Setting("files/recent", list, [], "recently opened project files, newest first")
RECENT_MAX = Setting("files/recent_max", int, 10, "how many recent projects File > Open Recent lists")
REOPEN_LAST_PROJECT = Setting("files/reopen_last", bool, True,
                              "open the most recent project on start (otherwise the start page shows)")
LAST_DIRECTORY = Setting("files/last_directory", str, "", "folder the open/save dialogs start in")
THEME = Setting("view/theme", str, "system", "colours of the app: 'system' (the platform's palette), 'light' or 'dark'")
AUTOSAVE_INTERVAL = Setting("autosave/interval_s", int, 60,
                            "seconds between autosaves of a modified project (0 turns autosave off)")


def _as_list(value: Any) -> List[Any]:
    """QSettings gives back a one-item list as a plain string and an empty one as None."""
    if value is None or value == "":
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


class Settings:
    """Typed access to the app's QSettings (the default store, or one given for tests)."""

    def __init__(self, store: Optional[QSettings] = None) -> None:
        self.store = store if store is not None else QSettings(ORGANIZATION, APPLICATION)

    def get(self, setting: Setting) -> Any:
        raw = self.store.value(setting.key, None)
        if raw is None:
            return setting.default
        try:
            if setting.type is list:
                return _as_list(raw)
            if setting.type is bool:
                return raw if isinstance(raw, bool) else str(raw).lower() in ("true", "1", "yes")
            if setting.type is QByteArray:
                return raw if isinstance(raw, QByteArray) else QByteArray(raw)
            return setting.type(raw)
        except (TypeError, ValueError):
            return setting.default

    def set(self, setting: Setting, value: Any) -> None:
        self.store.setValue(setting.key, value)

    def sync(self) -> None:
        self.store.sync()

    # ---- recent projects --------------------------------------------------------------------
    def recent_projects(self) -> List[str]:
        """Recent project files that still exist, newest first (vanished ones are forgotten)."""
        paths = [str(p) for p in self.get(RECENT_PROJECTS)]
        alive = [p for p in paths if os.path.isfile(p)]
        if alive != paths:
            self.set(RECENT_PROJECTS, alive)
        return alive

    def add_recent_project(self, path: str) -> None:
        path = os.path.abspath(path)
        paths = [p for p in self.recent_projects() if p != path]
        self.set(RECENT_PROJECTS, [path] + paths[: max(0, self.get(RECENT_MAX) - 1)])

    def clear_recent_projects(self) -> None:
        self.set(RECENT_PROJECTS, [])
