"""The EDIT tab's network tabs (issue 17): Main and the project's other networks, added, renamed and deleted.

Choosing a tab makes the document edit that network (``ProjectDocument.show_network``); the canvas, the
property panel and every layer edit follow it. Adding, renaming and deleting a network are undoable
commands; a network an optimizer trains is renamed with it and cannot be deleted while it is trained.
"""
from __future__ import annotations

import copy
from typing import Any, List, Optional

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QUndoCommand
from PySide6.QtWidgets import (QHBoxLayout, QInputDialog, QLineEdit, QMenu, QTabBar, QToolButton, QWidget)

from nnconsole.app.widgets.rich_text import plain_tooltip
from nnconsole.engine.project.model import MAIN_NETWORK, Network
from nnconsole.engine.project.structure import NETWORK_NAME


def network_name_problem(document: Any, name: str, current: str = "") -> str:
    """Why ``name`` cannot name a network ('' when it can)."""
    if not name.strip():
        return "a network name cannot be empty"
    if not NETWORK_NAME.fullmatch(name):
        return f"network name '{name}' must be up to 64 letters, digits, '_', '-' or '.' (no spaces)"
    if name == MAIN_NETWORK or (name in document.project.networks and name != current):
        return f"the project already has a network named '{name}'"
    return ""


class AddNetworkCommand(QUndoCommand):
    """Add an empty network (or a copy) at the end of the tabs and show it."""

    def __init__(self, document: Any, name: str, network: Optional[Network] = None) -> None:
        super().__init__(f"Add network {name}")
        self._doc, self._name = document, name
        self._network = copy.deepcopy(network) if network is not None else Network()
        self._shown = document.active_network

    def redo(self) -> None:
        self._doc.insert_network(len(self._doc.project.networks), self._name, copy.deepcopy(self._network))
        self._doc.show_network(self._name)

    def undo(self) -> None:
        self._doc.remove_network(self._name)
        self._doc.show_network(self._shown)


class RemoveNetworkCommand(QUndoCommand):
    """Delete a network; undo puts it back at its place."""

    def __init__(self, document: Any, name: str) -> None:
        super().__init__(f"Delete network {name}")
        self._doc, self._name = document, name
        self._index = 0
        self._network: Optional[Network] = None

    def redo(self) -> None:
        self._index, network = self._doc.remove_network(self._name)
        self._network = copy.deepcopy(network)

    def undo(self) -> None:
        self._doc.insert_network(self._index, self._name, copy.deepcopy(self._network))
        self._doc.show_network(self._name)


class RenameNetworkCommand(QUndoCommand):
    def __init__(self, document: Any, old: str, new: str) -> None:
        super().__init__(f"Rename network {old} to {new}")
        self._doc, self._old, self._new = document, old, new

    def redo(self) -> None:
        self._doc.rename_network(self._old, self._new)

    def undo(self) -> None:
        self._doc.rename_network(self._new, self._old)


class NetworkTabs(QWidget):
    """A tab per network (Main first) with add, rename and delete; ``message`` says why an edit was refused."""

    message = Signal(str)

    def __init__(self, document: Any, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("network_tabs")
        self.document = document
        self.bar = QTabBar()
        self.bar.setObjectName("network_tab_bar")
        self.bar.setDrawBase(False)
        self.bar.setExpanding(False)
        self.bar.setShape(QTabBar.RoundedSouth)  # sheet tabs under the canvas, beside the totals
        self.bar.setUsesScrollButtons(False)  # every network visible
        self.bar.setContextMenuPolicy(Qt.CustomContextMenu)
        self.add_button = QToolButton()
        self.add_button.setObjectName("add_network_button")
        self.add_button.setText("+")
        self.add_button.setToolTip("Add a network (a GAN's generator, a VAE's decoder, ...)")
        box = QHBoxLayout(self)
        box.setContentsMargins(2, 0, 2, 0)
        box.addWidget(self.bar)
        box.addWidget(self.add_button)
        box.addStretch(1)
        self._syncing = False
        self.bar.currentChanged.connect(self._tab_chosen)
        self.bar.customContextMenuRequested.connect(self._context_menu)
        self.bar.tabBarDoubleClicked.connect(lambda i: self.ask_rename(self.bar.tabText(i)))
        self.add_button.clicked.connect(self.ask_add)
        document.networks_changed.connect(self.sync)
        document.reloaded.connect(self.sync)
        self.sync()

    def names(self) -> List[str]:
        return [MAIN_NETWORK] + list(self.document.project.networks)

    def sync(self) -> None:
        """Tabs as the document has them, the edited network current."""
        self._syncing = True
        try:
            names = self.names()
            while self.bar.count() > len(names):
                self.bar.removeTab(self.bar.count() - 1)
            for i, name in enumerate(names):
                if i < self.bar.count():
                    self.bar.setTabText(i, name)
                else:
                    self.bar.addTab(name)
                trained = [o.name for o in self.document.project.optimizers if o.network == name]
                self.bar.setTabToolTip(i, plain_tooltip(f"trained by {', '.join(trained)}") if trained else
                                       "trained by the CONFIG tab's optimizer" if name == MAIN_NETWORK else
                                       "not trained by any optimizer (CONFIG lists them)")
            self.bar.setCurrentIndex(names.index(self.document.active_network)
                                     if self.document.active_network in names else 0)
        finally:
            self._syncing = False

    def _tab_chosen(self, index: int) -> None:
        if not self._syncing and 0 <= index < self.bar.count():
            self.document.show_network(self.bar.tabText(index))

    # ---- edits (tests call these directly) -------------------------------------------------------
    def add_network(self, name: str) -> str:
        """Add an empty network ``name``; returns why not ('' when added)."""
        problem = network_name_problem(self.document, name)
        if problem:
            self.message.emit(problem)
            return problem
        self.document.undo_stack.push(AddNetworkCommand(self.document, name))
        return ""

    def rename_network(self, old: str, new: str) -> str:
        if old == MAIN_NETWORK:
            problem = "Main is the project's training network and keeps its name"
        else:
            problem = network_name_problem(self.document, new, current=old)
        if problem:
            self.message.emit(problem)
            return problem
        if new != old:
            self.document.undo_stack.push(RenameNetworkCommand(self.document, old, new))
        return ""

    def delete_network(self, name: str) -> str:
        trained = [o.name for o in self.document.project.optimizers if o.network == name]
        project = self.document.project
        units = [f"'{layer.name}' ({owner})" for owner, network in [(MAIN_NETWORK, project.network),
                                                                     *project.networks.items()]
                 for layer in network.layers if layer.type == "Unit" and owner != name
                 and isinstance(layer.params, dict) and layer.params.get("network") == name]
        problem = ("Main is the project's training network and cannot be deleted" if name == MAIN_NETWORK else
                   f"optimizer {', '.join(trained)} trains network '{name}'; remove it in CONFIG first"
                   if trained else f"unit {', '.join(units)} runs network '{name}'; remove or change the unit first"
                   if units else "")
        if problem:
            self.message.emit(problem)
            return problem
        self.document.undo_stack.push(RemoveNetworkCommand(self.document, name))
        return ""

    # ---- dialogs ---------------------------------------------------------------------------------
    def _ask(self, title: str, text: str, value: str) -> Optional[str]:
        name, ok = QInputDialog.getText(self, title, text, QLineEdit.Normal, value)
        return name if ok else None

    def ask_add(self) -> None:
        n = len(self.document.project.networks) + 1
        name = self._ask("Add Network", "Name of the new network:", f"Network{n}")
        if name is not None:
            self.add_network(name)

    def ask_rename(self, old: str) -> None:
        name = self._ask("Rename Network", f"New name of network '{old}':", old)
        if name is not None:
            self.rename_network(old, name)

    def _context_menu(self, pos: Any) -> None:
        index = self.bar.tabAt(pos)
        if index < 0:
            return
        name = self.bar.tabText(index)
        menu = QMenu(self)
        menu.addAction("Rename Network...", lambda: self.ask_rename(name)).setEnabled(name != MAIN_NETWORK)
        menu.addAction("Delete Network", lambda: self.delete_network(name)).setEnabled(name != MAIN_NETWORK)
        menu.addSeparator()
        menu.addAction("Add Network...", self.ask_add)
        menu.exec(self.bar.mapToGlobal(pos))
