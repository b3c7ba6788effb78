"""The open project as the GUI sees it: the engine's Project dataclasses plus an undo stack and signals.

Views never change the Project directly: they push QUndoCommands (``console_app/document/commands.py`` for
the network, ``console_app/config/commands.py`` for settings) whose redo/undo call the small
mutation methods here, which announce what changed through past-tense signals.
"""
from __future__ import annotations

import os
from typing import Any, Optional

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QUndoStack

from nnconsole.app.document import file_versions
from nnconsole.app.document.file_versions import DiskState
from nnconsole.engine.project.io import save_project
from nnconsole.engine.project.model import MAIN_NETWORK, Layer, Network, Project
from nnconsole.engine.check.project_file import load_valid_project


class ProjectDocument(QObject):
    """One open project: model, file path, undo stack and change notifications."""

    network_changed = Signal()  # any layer added, removed, connected or edited
    layer_changed = Signal(str)  # one layer's params/initializers/multipliers/position changed (its name)
    settings_changed = Signal(str)  # a dotted settings path changed, e.g. "config.batch_size"
    path_changed = Signal(str)  # the same project now lives in another file (a save to a new path)
    modified_changed = Signal(bool)
    # A different project (new content and possibly a new path) is now in this document: views rebuild
    # everything from it. Loading emits this, not path_changed, so one open refreshes each view once.
    reloaded = Signal()
    # A save replaced a version of the file written outside nnconsole; that version was kept here (path).
    outside_version_kept = Signal(str)
    networks_changed = Signal()  # a network was added, removed or renamed, or another one is shown (issue 17)

    def __init__(self, project: Optional[Project] = None, parent: Optional[QObject] = None) -> None:
        super().__init__(parent)
        self.project = project or Project()
        self.active_network = MAIN_NETWORK  # the network the EDIT tab shows and edits (Main or project.networks)
        # The project file as this document last read or wrote it: what "changed outside" compares with.
        self.disk_state: Optional[DiskState] = file_versions.disk_state(self.project.path)
        self.undo_stack = QUndoStack(self)
        # a bound method (not a lambda), so Qt drops the connection when the document is destroyed
        self.undo_stack.cleanChanged.connect(self._clean_changed)

    # ---- files --------------------------------------------------------------------------------
    @property
    def path(self) -> Optional[str]:
        return self.project.path

    @property
    def modified(self) -> bool:
        return not self.undo_stack.isClean()

    def load(self, path: str, check_datasets: bool = False) -> None:
        """Replace the document with the project at ``path`` (raises ProjectError)."""
        state = file_versions.disk_state(path)  # before reading: a change during the read is then noticed
        self.project = load_valid_project(path, check_datasets=check_datasets)
        self.active_network = MAIN_NETWORK
        self.disk_state = state
        self._reset_history(modified=False)
        self._announce_reload()

    def changed_on_disk(self) -> Optional[DiskState]:
        """The project file's state when someone changed it since this document read or wrote it."""
        return file_versions.changed_on_disk(self.project.path, self.disk_state)

    def save(self, path: Optional[str] = None) -> str:
        """Save atomically (with a .bak of the previous file) and mark the stack clean.

        A version of the file written outside nnconsole since this document read it is first kept as
        ``<name>.outside-<time>.yaml`` (the .bak alone would lose it at the next save); callers that
        can ask the user do so before (``ProjectFiles``). Raises OSError when it cannot be kept.
        """
        before = os.path.abspath(self.project.path) if self.project.path else None
        kept = None
        if before and os.path.abspath(path or before) == before and self.changed_on_disk():
            kept = file_versions.keep_copy(before, before, "outside")
        target = save_project(self.project, path or self.project.path)
        self.disk_state = file_versions.disk_state(target)
        self.undo_stack.setClean()
        if target != before:
            self.path_changed.emit(target)
        if kept:
            self.outside_version_kept.emit(kept)
        return target

    def display_name(self) -> str:
        if self.project.path:
            return os.path.basename(os.path.dirname(self.project.path)) + "/" + os.path.basename(self.project.path)
        return self.project.name or "untitled"

    # ---- the network being edited (issue 17) -------------------------------------------------
    @property
    def network(self) -> Network:
        """The network the EDIT tab edits: Main (``project.network``) or ``project.networks[active_network]``."""
        return self.project.networks.get(self.active_network, self.project.network)

    def show_network(self, name: str) -> None:
        """Edit network ``name`` (Main when the project has no such network); undo commands call it first."""
        name = name if name in self.project.networks else MAIN_NETWORK
        if name != self.active_network:
            self.active_network = name
            self.networks_changed.emit()
            self.network_changed.emit()

    def insert_network(self, index: int, name: str, network: Network) -> None:
        items = list(self.project.networks.items())
        items.insert(index, (name, network))
        self.project.networks = dict(items)
        self.networks_changed.emit()

    def remove_network(self, name: str) -> tuple:
        """Remove a network (never Main); returns (index, network) so undo can put it back."""
        index = list(self.project.networks).index(name)
        network = self.project.networks.pop(name)
        if self.active_network == name:
            self.active_network = MAIN_NETWORK
            self.network_changed.emit()
        self.networks_changed.emit()
        return index, network

    def rename_network(self, old: str, new: str) -> None:
        """Rename a network in place, with the optimizers that train it and the Unit layers that run it."""
        self.project.networks = {new if k == old else k: v for k, v in self.project.networks.items()}
        for entry in self.project.optimizers:
            if entry.network == old:
                entry.network = new
        for network in [self.project.network, *self.project.networks.values()]:
            for layer in network.layers:
                if layer.type == "Unit" and isinstance(layer.params, dict) and layer.params.get("network") == old:
                    layer.params["network"] = new
        if self.active_network == old:
            self.active_network = new
        self.networks_changed.emit()
        self.settings_changed.emit("optimizers")

    # ---- mutations (called only from undo commands) ------------------------------------------
    def insert_layer(self, index: int, layer: Layer) -> None:
        self.network.layers.insert(index, layer)
        self.network_changed.emit()

    def remove_layer(self, name: str) -> tuple:
        """Remove a layer; returns (index, layer) so undo can put it back."""
        layers = self.network.layers
        for i, layer in enumerate(layers):
            if layer.name == name:
                del layers[i]
                self.network_changed.emit()
                return i, layer
        raise KeyError(name)

    def set_layer_field(self, name: str, field: str, value: Any) -> None:
        """Set one field of a layer (inputs, params, initializers, lr_multipliers, position, name, type)."""
        layer = self.network.layer(name)
        setattr(layer, field, value)
        self.layer_changed.emit(layer.name)
        if field in ("inputs", "params", "name", "type"):
            self.network_changed.emit()

    def set_setting(self, dotted: str, value: Any) -> None:
        """Set a settings value by dotted path, e.g. ``optimizer.schedule.type``."""
        target: Any = self.project
        parts = dotted.split(".")
        for part in parts[:-1]:
            target = getattr(target, part)
        setattr(target, parts[-1], value)
        self.settings_changed.emit(dotted)

    def get_setting(self, dotted: str) -> Any:
        target: Any = self.project
        for part in dotted.split("."):
            target = getattr(target, part)
        return target

    def replace_project(self, project: Project, modified: bool = False,
                        disk_state: Optional[DiskState] = None) -> None:
        """Show ``project`` (already loaded, e.g. leniently or from an autosave) instead of the current one.

        The undo history is cleared; with ``modified`` the document starts unsaved (a recovered
        autosave differs from the file on disk). ``disk_state`` is the file's state taken before it
        was read (default: its state now).
        """
        self.project = project
        self.active_network = MAIN_NETWORK
        self.disk_state = disk_state or file_versions.disk_state(project.path)
        self._reset_history(modified)
        self._announce_reload()

    def _reset_history(self, modified: bool) -> None:
        """An empty undo history, clean unless ``modified``.

        ``QUndoStack.clear()`` leaves the clean index alone when the stack is already empty, so after
        a ``resetClean()`` (clean index -1) every later project would read as modified: set it here.
        """
        self.undo_stack.clear()
        if modified:
            self.undo_stack.resetClean()
        else:
            self.undo_stack.setClean()

    def _announce_reload(self) -> None:
        # network_changed first: views that debounce it stop their timer when they rebuild on reloaded
        self.network_changed.emit()
        self.reloaded.emit()

    def _clean_changed(self, clean: bool) -> None:
        self.modified_changed.emit(not clean)
