"""Runs belong to their projects: one RunController per project file, only the open project's shown.

When another project is opened during a run, the run's controller stays here and keeps following it
(its curves, progress and Stop are not shown under the other project's title); a status-bar line says
what trains in the background, with a link that opens its project again, where it shows live. At exit
every run is either stopped or released (left running, detached, for the next start to attach to).
"""
from __future__ import annotations

import html
import os
from typing import Callable, Dict, List, Optional, Tuple

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QLabel

from nnconsole.app.bridge.run_controller import RunController
from nnconsole.engine.rundir.protocol import TRAIN


def project_key(path: Optional[str]) -> str:
    """The key of a project's runs: its file's absolute path ('' for an untitled project)."""
    return os.path.abspath(path) if path else ""


def project_name(key: str) -> str:
    """'folder/project.yaml', as the window title names a project."""
    return os.path.basename(os.path.dirname(key)) + "/" + os.path.basename(key) if key else "untitled"


class ProjectRuns(QObject):
    """The controllers of every project that has (or last had) a run followed in this window."""

    background_changed = Signal()  # a run of a project not shown started, progressed or ended

    def __init__(self, wire: Callable[[RunController], None], parent: Optional[QObject] = None) -> None:
        super().__init__(parent)
        self._wire = wire  # connects a new controller's signals to the page
        self.controllers: Dict[str, RunController] = {}
        self.latest: Dict[str, dict] = {}  # key -> the newest train record of its run
        self.shown = ""
        self.indicator = QLabel()
        self.indicator.setObjectName("training_background_runs")
        self.indicator.setTextFormat(Qt.RichText)
        self.indicator.hide()
        self.background_changed.connect(self._update_indicator)

    def controller(self, key: str) -> RunController:
        """The controller of project ``key`` (created, idle, when it has none)."""
        found = self.controllers.get(key)
        if found is None:
            found = RunController(self)
            self.controllers[key] = found
            found.records_received.connect(lambda _d, records, k=key: self._note_records(k, records))
            found.running_changed.connect(lambda _running, k=key: self._note_running(k))
            self._wire(found)
        return found

    def key_of(self, controller: RunController) -> str:
        return next((k for k, c in self.controllers.items() if c is controller), "")

    def show(self, key: str) -> RunController:
        """Project ``key`` is now the open one: idle controllers of other projects are dropped."""
        self.shown = key
        for other in [k for k, c in self.controllers.items() if k != key and not c.is_running()]:
            self._drop(other)
        self._update_indicator()
        return self.controller(key)

    def running(self) -> List[Tuple[str, RunController]]:
        """(project key, controller) of every run followed, the shown project's first."""
        found = [(k, c) for k, c in self.controllers.items() if c.is_running()]
        return sorted(found, key=lambda kc: kc[0] != self.shown)

    def shutdown(self, stop: bool) -> None:
        """Application exit: stop every run gracefully (waiting), or release them to train on."""
        for _key, controller in self.running():
            if stop:
                controller.shutdown()
            else:
                controller.release()
        for controller in self.controllers.values():
            controller.release()  # timers of idle ones

    # ---- background runs ------------------------------------------------------------------------
    def _note_records(self, key: str, records: List[dict]) -> None:
        train = [r for r in records if r.get("type") == TRAIN]
        if train:
            self.latest[key] = train[-1]
            if key != self.shown:
                self.background_changed.emit()

    def _note_running(self, key: str) -> None:
        """A run started or ended (an ended background run's idle controller goes at the next ``show``)."""
        controller = self.controllers.get(key)
        if controller is not None and not controller.is_running():
            self.latest.pop(key, None)
        self.background_changed.emit()

    def _drop(self, key: str) -> None:
        controller = self.controllers.pop(key, None)
        self.latest.pop(key, None)
        if controller is not None:
            controller.release()
            controller.deleteLater()

    def background_text(self) -> str:
        """What trains in the background, for the status bar ('' when nothing does)."""
        parts = []
        for key, controller in self.running():
            if key == self.shown:
                continue
            record = self.latest.get(key) or {}
            where = ""
            if record.get("total_iterations"):
                where = f" {record.get('iteration', 0):,} / {record['total_iterations']:,}"
            parts.append(f"training <a href=\"{html.escape(key)}\">{html.escape(project_name(key))}</a>{where}")
        return " &middot; ".join(parts)

    def _update_indicator(self) -> None:
        text = self.background_text()
        self.indicator.setText(text)
        self.indicator.setToolTip("Runs of other projects go on; open a project to see its run and stop it."
                                  if text else "")
        self.indicator.setVisible(bool(text))
