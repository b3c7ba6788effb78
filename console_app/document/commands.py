"""Undo commands for the EDIT tab: one QUndoCommand class per kind of network edit.

Each command takes deep-copied snapshots when it is built and its redo/undo only call the
``ProjectDocument`` mutation methods, so undoing everything gives back the original project
exactly. Compound edits (paste, delete with edges) are macros built by ``nnconsole.app.edit.editor``.
"""
from __future__ import annotations

import copy
from typing import Any, Dict, List, Optional, Sequence, Tuple

from PySide6.QtGui import QUndoCommand

from nnconsole.engine.project.model import Initializer, Layer, SearchRange

MOVE_COMMAND_ID = 4001  # consecutive moves of the same nodes merge into one undo step

Position = Tuple[float, float]


def _short(names: Sequence[str], limit: int = 3) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


class _LayerFieldCommand(QUndoCommand):
    """Replace one field of one layer by a new value; undo puts the old value back."""

    def __init__(self, document: Any, layer_name: str, field: str, new_value: Any, text: str) -> None:
        super().__init__(text)
        self._doc = document
        self._net = document.active_network
        self._name = layer_name
        self._field = field
        self._old = copy.deepcopy(getattr(document.network.layer(layer_name), field))
        self._new = copy.deepcopy(new_value)

    def redo(self) -> None:
        self._doc.show_network(self._net)
        self._doc.set_layer_field(self._name, self._field, copy.deepcopy(self._new))

    def undo(self) -> None:
        self._doc.show_network(self._net)
        self._doc.set_layer_field(self._name, self._field, copy.deepcopy(self._old))


class AddLayerCommand(QUndoCommand):
    """Insert a new layer (at the end of the layer list unless ``index`` is given)."""

    def __init__(self, document: Any, layer: Layer, index: Optional[int] = None) -> None:
        super().__init__(f"Add {layer.name}")
        self._doc = document
        self._net = document.active_network
        self._layer = copy.deepcopy(layer)
        self._index = index

    def redo(self) -> None:
        self._doc.show_network(self._net)
        index = len(self._doc.network.layers) if self._index is None else self._index
        self._doc.insert_layer(index, copy.deepcopy(self._layer))

    def undo(self) -> None:
        self._doc.show_network(self._net)
        self._doc.remove_layer(self._layer.name)


class RemoveLayersCommand(QUndoCommand):
    """Remove layers; undo puts each back at its old index (connections are separate commands)."""

    def __init__(self, document: Any, names: Sequence[str]) -> None:
        super().__init__(f"Delete {_short(list(names))}")
        self._doc = document
        self._net = document.active_network
        self._names = list(names)
        self._removed: List[Tuple[int, Layer]] = []

    def redo(self) -> None:
        self._doc.show_network(self._net)
        layers = self._doc.network.layers
        indices = sorted((i for i, layer in enumerate(layers) if layer.name in self._names), reverse=True)
        removed = []
        for i in indices:
            index, layer = self._doc.remove_layer(layers[i].name)
            removed.append((index, copy.deepcopy(layer)))
        self._removed = list(reversed(removed))  # ascending index order

    def undo(self) -> None:
        self._doc.show_network(self._net)
        for index, layer in self._removed:
            self._doc.insert_layer(index, copy.deepcopy(layer))


class ConnectCommand(_LayerFieldCommand):
    """Feed ``source`` into ``target`` at input pin ``index`` (default: after the existing inputs)."""

    def __init__(self, document: Any, source: str, target: str, index: Optional[int] = None) -> None:
        inputs = list(document.network.layer(target).inputs)
        inputs.insert(len(inputs) if index is None else index, source)
        super().__init__(document, target, "inputs", inputs, f"Connect {source} to {target}")


class DisconnectCommand(_LayerFieldCommand):
    """Remove input pin ``index`` of ``target``."""

    def __init__(self, document: Any, target: str, index: int) -> None:
        inputs = list(document.network.layer(target).inputs)
        source = inputs.pop(index)
        super().__init__(document, target, "inputs", inputs, f"Disconnect {source} from {target}")


class SetParamCommand(_LayerFieldCommand):
    """Set one parameter (an already checked, canonical value) of a layer."""

    def __init__(self, document: Any, layer_name: str, key: str, value: Any) -> None:
        params = dict(document.network.layer(layer_name).params)
        params[key] = list(value) if isinstance(value, tuple) else value
        super().__init__(document, layer_name, "params", params, f"Set {layer_name}.{key}")


class SetSearchCommand(_LayerFieldCommand):
    """Mark one property of a layer searched with its range, or with None unmark it (``Layer.search``)."""

    def __init__(self, document: Any, layer_name: str, key: str, searched: Optional[SearchRange]) -> None:
        flags = dict(document.network.layer(layer_name).search)
        if searched is None:
            flags.pop(key, None)
        else:
            flags[key] = searched
        what = f"Search {layer_name}.{key}" if searched is not None else f"Stop searching {layer_name}.{key}"
        super().__init__(document, layer_name, "search", flags, what)


class SetInitializerCommand(_LayerFieldCommand):
    """Set (or with None, remove) the initializer of one weight, e.g. ``W``."""

    def __init__(self, document: Any, layer_name: str, key: str, initializer: Optional[Initializer]) -> None:
        inits = dict(document.network.layer(layer_name).initializers)
        if initializer is None:
            inits.pop(key, None)
        else:
            inits[key] = copy.deepcopy(initializer)
        super().__init__(document, layer_name, "initializers", inits, f"Set {layer_name}.{key} initializer")


class SetLrMultiplierCommand(_LayerFieldCommand):
    """Set (or with None, remove) the learning-rate multiplier of one weight."""

    def __init__(self, document: Any, layer_name: str, key: str, value: Optional[float]) -> None:
        mults = dict(document.network.layer(layer_name).lr_multipliers)
        if value is None:
            mults.pop(key, None)
        else:
            mults[key] = float(value)
        super().__init__(document, layer_name, "lr_multipliers", mults,
                         f"Set {layer_name}.{key} learning-rate multiplier")


class SetParameterScopeCommand(_LayerFieldCommand):
    """Set a layer's parameter scope ('' = its own name); layers naming one scope share weights."""

    def __init__(self, document: Any, layer_name: str, scope: str) -> None:
        super().__init__(document, layer_name, "parameter_scope", scope, f"Set {layer_name} parameter scope")


class MoveNodesCommand(QUndoCommand):
    """Move layers on the canvas; consecutive moves of the same set of layers merge into one step."""

    def __init__(self, document: Any, positions: Dict[str, Position], text: str = "",
                 mergeable: bool = True) -> None:
        names = sorted(positions)
        super().__init__(text or f"Move {_short(names)}")
        self._doc = document
        self._mergeable = mergeable
        self._net = document.active_network
        network = document.network
        self._old: Dict[str, Optional[Position]] = {n: copy.deepcopy(network.layer(n).position) for n in names}
        self._new: Dict[str, Position] = {n: (float(positions[n][0]), float(positions[n][1])) for n in names}

    def id(self) -> int:  # noqa: A003 - Qt's name
        return MOVE_COMMAND_ID if self._mergeable else -1

    def mergeWith(self, other: QUndoCommand) -> bool:  # noqa: N802 - Qt override
        if not isinstance(other, MoveNodesCommand) or set(other._new) != set(self._new) or other._net != self._net:
            return False
        self._new = dict(other._new)
        self.setObsolete(all(self._old[n] == self._new[n] for n in self._new))
        return True

    def redo(self) -> None:
        self._doc.show_network(self._net)
        for name, pos in self._new.items():
            self._doc.set_layer_field(name, "position", pos)

    def undo(self) -> None:
        self._doc.show_network(self._net)
        for name, pos in self._old.items():
            self._doc.set_layer_field(name, "position", copy.deepcopy(pos))


class RenameLayerCommand(QUndoCommand):
    """Rename a layer and every reference to it in other layers' inputs."""

    def __init__(self, document: Any, old: str, new: str) -> None:
        super().__init__(f"Rename {old} to {new}")
        self._doc = document
        self._old_name = old
        self._new_name = new
        self._net = document.active_network
        self._consumers: List[Tuple[str, List[str], List[str]]] = []
        for layer in document.network.consumers(old):
            after = [new if src == old else src for src in layer.inputs]
            self._consumers.append((layer.name, list(layer.inputs), after))

    def _current(self, name: str, renamed: bool) -> str:
        return (self._new_name if renamed else self._old_name) if name == self._old_name else name

    def redo(self) -> None:
        self._doc.show_network(self._net)
        self._doc.set_layer_field(self._old_name, "name", self._new_name)
        for name, _, after in self._consumers:
            self._doc.set_layer_field(self._current(name, True), "inputs", list(after))

    def undo(self) -> None:
        self._doc.show_network(self._net)
        for name, before, _ in self._consumers:
            self._doc.set_layer_field(self._current(name, True), "inputs", list(before))
        self._doc.set_layer_field(self._new_name, "name", self._old_name)
