"""Network edits as a user asks for them: checks the request, then pushes undo commands.

The palette, canvas, property panel and menu actions all call these methods, and tests call
them too, so every edit goes through one path. A refused edit returns (or posts) a message
saying why; it never changes the document.
"""
from __future__ import annotations

import math
from contextlib import contextmanager
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from PySide6.QtCore import QObject, Signal

from nnconsole.app.document import commands
from nnconsole.app.edit import layout
from nnconsole.app.edit.clipboard import layers_from_json, layers_to_json, plain, rename_for_paste, unique_name
from nnconsole.app.widgets.search_range import parse_range
from nnconsole.engine.layers import defaults, get_spec
from nnconsole.engine.network.arguments import macro_name
from nnconsole.engine.project.model import INITIALIZERS, Initializer, Layer, Network
from nnconsole.engine.project.searched_properties import ARGUMENT_VALUE, argument_flag, property_value

Position = Tuple[float, float]


def _number(text: Any, what: str) -> float:
    try:
        value = float(text.strip() if isinstance(text, str) else text)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"{what} must be a finite number, got {text!r}")
    return value


class NetworkEditor(QObject):
    """Checked edit operations on a ProjectDocument's network, each one undoable."""

    message_posted = Signal(str)  # why an edit was refused, or what a compound edit did

    def __init__(self, document: Any, parent: Optional[QObject] = None) -> None:
        super().__init__(parent)
        self.document = document

    @property
    def network(self) -> Network:
        return self.document.network  # the network chosen in the EDIT tab's network tabs

    def _push(self, command: Any) -> None:
        self.document.undo_stack.push(command)

    @contextmanager
    def _macro(self, text: str) -> Iterator[None]:
        stack = self.document.undo_stack
        stack.beginMacro(text)
        try:
            yield
        finally:
            stack.endMacro()

    def _refuse(self, message: str) -> str:
        self.message_posted.emit(message)
        return message

    # ---- layers ---------------------------------------------------------------------------------
    def add_layer(self, type_name: str, position: Optional[Position] = None, after: Optional[str] = None) -> str:
        """Add a layer of ``type_name`` with default parameters; return its name.

        With ``after`` (the selected layer, as in NNC) the new layer is inserted into the chain: it
        goes below ``after``, is fed by it, feeds what ``after`` fed (a loss or metric layer only
        reads it), and the layers below move down a row to make room. Otherwise it goes at
        ``position`` or under the network. One undo step.
        """
        spec = get_spec(type_name)
        network = self.network
        placed = layout.effective_positions(network)
        if after is not None and after in placed:
            takes_inputs = spec.n_inputs[1] is None or spec.n_inputs[1] > 0
            splice = takes_inputs and not (spec.is_loss or spec.is_metric)
            slots = self._consumer_slots(after) if splice else []
            ax, ay = placed[after]
            if slots:
                return self._insert(spec.type, after if takes_inputs else None, slots, (ax, ay + layout.ROW),
                                    make_room=True)
            pos = layout.free_position((ax, ay + layout.ROW), placed.values())
            return self._insert(spec.type, after if takes_inputs else None, [], pos)
        if position is not None:
            pos = layout.free_position((layout.snap(position[0]), layout.snap(position[1])), placed.values())
        else:
            pos = layout.below(placed)
        return self._insert(spec.type, None, [], pos)

    def insert_into_link(self, type_name: str, target: str, index: int, position: Position) -> Optional[str]:
        """A layer dropped on the link feeding ``target``'s input ``index``: source -> new -> target."""
        spec = get_spec(type_name)
        layer = self.network.layer(target)
        if index >= len(layer.inputs):
            return None
        if spec.n_inputs[1] == 0 or spec.is_loss or spec.is_metric:
            self._refuse(f"{spec.type} cannot go into a link: it takes no inputs or ends the network")
            return None
        pos = (layout.snap(position[0]), layout.snap(position[1]))
        return self._insert(spec.type, layer.inputs[index], [(target, index)], pos)

    def _consumer_slots(self, source: str) -> List[Tuple[str, int]]:
        return [(c.name, i) for c in self.network.consumers(source) for i, s in enumerate(c.inputs) if s == source]

    def _insert(self, type_name: str, source: Optional[str], slots: List[Tuple[str, int]], pos: Position,
                make_room: bool = False) -> str:
        """Add the layer (fed by ``source``, right after it in the layer list) and re-feed ``slots``
        (target, input pin) from it; with ``make_room`` what lies below ``pos`` moves down a row."""
        network = self.network
        name = unique_name(type_name, network.names())
        index = network.names().index(source) + 1 if source in network.names() else None
        layer = Layer(name=name, type=type_name, inputs=[source] if source else [], params=defaults(type_name),
                      position=(float(pos[0]), float(pos[1])))
        with self._macro(f"Insert {name}" if slots else f"Add {name}"):
            if make_room:
                placed = layout.effective_positions(network)
                below = {n: (x, y + layout.ROW) for n, (x, y) in placed.items() if y >= pos[1] - 1e-6}
                if below:
                    self._push(commands.MoveNodesCommand(self.document, below, text="Make room", mergeable=False))
            self._push(commands.AddLayerCommand(self.document, layer, index))
            for target, pin in slots:
                self._push(commands.DisconnectCommand(self.document, target, pin))
                self._push(commands.ConnectCommand(self.document, name, target, pin))
        return name

    def remove(self, names: Iterable[str] = (), edges: Iterable[Tuple[str, int]] = ()) -> None:
        """Delete layers (with every connection to them) and connections given as (target, pin)."""
        doomed = [n for n in dict.fromkeys(names) if n in self.network.names()]
        cuts: Dict[str, set] = {}
        for target, index in edges:
            if target not in doomed and target in self.network.names():
                cuts.setdefault(target, set()).add(index)
        for layer in self.network.layers:
            if layer.name not in doomed:
                for i, src in enumerate(layer.inputs):
                    if src in doomed:
                        cuts.setdefault(layer.name, set()).add(i)
        if not doomed and not cuts:
            return
        what = f"Delete {', '.join(doomed[:3])}" + ("..." if len(doomed) > 3 else "") if doomed else "Disconnect"
        with self._macro(what):
            for target, pins in cuts.items():
                for index in sorted(pins, reverse=True):
                    if index < len(self.network.layer(target).inputs):
                        self._push(commands.DisconnectCommand(self.document, target, index))
            if doomed:
                self._push(commands.RemoveLayersCommand(self.document, doomed))

    def rename(self, old: str, new: str) -> Optional[str]:
        """Rename a layer (and its uses as an input); a message when the name is not acceptable."""
        new = new.strip()
        if new == old:
            return None
        if not new:
            return self._refuse("a layer needs a name; the old name was kept")
        if "/" in new:
            return self._refuse(f"layer names must not contain '/' (nnabla separates parameter scopes "
                                f"with it); '{old}' was kept")
        if new in self.network.names():
            return self._refuse(f"'{new}' is already the name of another layer; names must be unique")
        self._push(commands.RenameLayerCommand(self.document, old, new))
        return None

    # ---- connections ------------------------------------------------------------------------------
    def _reaches(self, start: str, goal: str) -> bool:
        """True when data flows from ``start`` to ``goal`` within one time step (following consumers; a
        Delay's first input is read at the next step, so a loop through it is no cycle)."""
        seen, stack = set(), [start]
        while stack:
            name = stack.pop()
            if name == goal:
                return True
            if name in seen:
                continue
            seen.add(name)
            stack.extend(layer.name for layer in self.network.consumers(name)
                         if not (layer.type == "Delay" and layer.inputs[:1] == [name]))
        return False

    def connect_layers(self, source: str, target: str, slot: Optional[int] = None) -> bool:
        """Feed ``source`` into ``target`` (at input pin ``slot``, replacing what is there)."""
        if source == target:
            self._refuse("a layer cannot feed itself")
            return False
        layer = self.network.layer(target)
        try:
            _, hi = get_spec(layer.type).n_inputs
        except KeyError:
            hi = None
        if hi == 0:
            self._refuse(f"{target} is an {layer.type} layer and takes no inputs")
            return False
        loop_back = layer.type == "Delay" and (slot == 0 or (slot is None and not layer.inputs))  # next step
        if not loop_back and self._reaches(target, source):
            self._refuse(f"connecting {source} to {target} would make a cycle ({target} already feeds {source})")
            return False
        inputs = layer.inputs
        if slot is not None and slot < len(inputs):
            if inputs[slot] == source:
                return False
            with self._macro(f"Connect {source} to {target}"):
                self._push(commands.DisconnectCommand(self.document, target, slot))
                self._push(commands.ConnectCommand(self.document, source, target, slot))
            return True
        if hi is not None and len(inputs) >= hi:
            if hi == 1:
                return self.connect_layers(source, target, 0)
            self._refuse(f"{target} already has its {hi} inputs; drop the connection on one of its input "
                         "pins to replace it, or delete a connection first")
            return False
        self._push(commands.ConnectCommand(self.document, source, target))
        return True

    # ---- properties ---------------------------------------------------------------------------------
    def set_param(self, name: str, key: str, raw: Any) -> Optional[str]:
        """Set a parameter from an editor's value or text; a message (and no change) when it is invalid."""
        layer = self.network.layer(name)
        try:
            pspec = get_spec(layer.type).param(key)
        except KeyError:
            return self._refuse(f"{layer.type} has no parameter '{key}'")
        reference = self._argument_reference(pspec, raw)
        if reference is not None and not reference[1]:
            return reference[0]
        try:
            value = reference[0] if reference is not None else plain(pspec.check(raw))
        except ValueError as exc:
            return str(exc)
        try:
            current = plain(pspec.check(layer.params.get(key, pspec.default)))
        except ValueError:
            current = layer.params.get(key)  # an Argument's name ('*ConvBS', 'n')
        if current == value and key in layer.params:
            return None
        self._push(commands.SetParamCommand(self.document, name, key, value))
        return None

    def set_search(self, name: str, key: str, text: Optional[str]) -> Optional[str]:
        """Mark property ``key`` of layer ``name`` searched over the range ``text`` (``16..128``, ``1e-4..1e-1
        log``, ``16, 32, 64``; see widgets.search_range), or with None unmark it: one undo step. An Argument's
        value also takes NNC's Search flag (its ``search`` parameter). A message (and no change) when the range
        does not read."""
        layer = self.network.layer(name)
        searched = None
        if text is not None:
            value = property_value(layer, key)
            values = value if isinstance(value, (list, tuple)) else [value]
            whole = all(isinstance(v, int) and not isinstance(v, bool) for v in values)
            try:
                searched = parse_range(text, whole)
            except ValueError as exc:
                return f"{key}: {exc}"
        flag = layer.type == "Argument" and key == ARGUMENT_VALUE
        if layer.search.get(key) == searched and (not flag or argument_flag(layer) == (searched is not None)):
            return None
        with self._macro(f"Search {name}.{key}" if searched is not None else f"Stop searching {name}.{key}"):
            self._push(commands.SetSearchCommand(self.document, name, key, searched))
            if flag and argument_flag(layer) != (searched is not None):
                self._push(commands.SetParamCommand(self.document, name, "search", searched is not None))
        return None

    def _argument_reference(self, pspec: Any, raw: Any) -> Optional[Tuple[str, bool]]:
        """A value naming an Argument of the edited network, as NNC allows in any property: ('*Name' or the bare
        name, True) when it does, (message, False) for a '*Name' it lacks, None for an ordinary value."""
        if pspec.kind == "str" or not isinstance(raw, str):
            return None
        text = raw.strip()
        declared = [x.name for x in self.network.layers if x.type == "Argument"]
        name = macro_name(text)
        if name is None:
            return (text, True) if text in declared else None
        if name in declared:
            return text, True
        return (f"{pspec.name}: '{text}' names no Argument of this network (its Arguments: "
                f"{', '.join(declared) or 'none'}); add an Argument layer named '{name}' first", False)

    def effective_initializer(self, name: str, key: str) -> Initializer:
        """The initializer a weight gets: the layer's own, else the layer type's default."""
        layer = self.network.layer(name)
        if key in layer.initializers:
            return layer.initializers[key]
        spec_default = get_spec(layer.type).weights.get(key)
        return Initializer(**vars(spec_default)) if spec_default else Initializer()

    def set_initializer(self, name: str, key: str, type: Optional[str] = None,  # noqa: A002 - NNC's word
                        multiplier: Any = None, value: Any = None) -> Optional[str]:
        """Change a weight's initializer type, multiplier or (Constant) value; a message when invalid."""
        current = self.effective_initializer(name, key)
        new = Initializer(type=current.type, multiplier=float(current.multiplier), value=float(current.value))
        try:
            if type is not None:
                if type not in INITIALIZERS:
                    raise ValueError(f"initializer must be one of {', '.join(INITIALIZERS)}, got {type!r}")
                new.type = type
            if multiplier is not None:
                new.multiplier = _number(multiplier, "multiplier")
            if value is not None:
                new.value = _number(value, "value")
        except ValueError as exc:
            return str(exc)
        if new == current and key in self.network.layer(name).initializers:
            return None
        self._push(commands.SetInitializerCommand(self.document, name, key, new))
        return None

    def set_lr_multiplier(self, name: str, key: str, raw: Any) -> Optional[str]:
        """Learning-rate multiplier of one weight (0 freezes it); a message when invalid."""
        try:
            value = _number(raw, "learning-rate multiplier")
        except ValueError as exc:
            return str(exc)
        if value < 0:
            return f"learning-rate multiplier must be >= 0 (0 freezes the weight), got {raw!r}"
        layer = self.network.layer(name)
        if layer.lr_multipliers.get(key, 1.0) == value and (key in layer.lr_multipliers or value == 1.0):
            return None
        self._push(commands.SetLrMultiplierCommand(self.document, name, key, value))
        return None

    def set_parameter_scope(self, name: str, text: str) -> Optional[str]:
        """Name where a layer's weights live ('' = its own name); layers naming one scope share weights."""
        scope = text.strip()
        if "/" in scope:
            return self._refuse("a parameter scope must not contain '/' (nnabla separates scopes with it); "
                                "use a plain name such as 'disc'")
        layer = self.network.layer(name)
        if scope == layer.name:
            scope = ""  # the default scope: the layer's own name (the project file keeps it empty)
        if scope == layer.parameter_scope:
            return None
        self._push(commands.SetParameterScopeCommand(self.document, name, scope))
        return None

    # ---- positions ------------------------------------------------------------------------------------
    def move(self, positions: Dict[str, Position]) -> None:
        """Store new canvas positions (one undo step; consecutive moves of the same nodes merge)."""
        network = self.network
        changed = {n: (float(p[0]), float(p[1])) for n, p in positions.items()
                   if n in network.names() and tuple(network.layer(n).position or ()) != (float(p[0]), float(p[1]))}
        if changed:
            self._push(commands.MoveNodesCommand(self.document, changed))

    def auto_layout(self) -> None:
        """Arrange the network top to bottom (one undo step)."""
        positions = layout.auto_layout(self.network)
        changed = {n: p for n, p in positions.items() if tuple(self.network.layer(n).position or ()) != p}
        if changed:
            self._push(commands.MoveNodesCommand(self.document, changed, text="Auto layout", mergeable=False))

    # ---- clipboard ------------------------------------------------------------------------------------
    def copy_text(self, names: Sequence[str]) -> str:
        """Clipboard text for the named layers, with their current positions."""
        placed = layout.effective_positions(self.network)
        chosen = []
        for layer in self.network.layers:
            if layer.name in names:
                copy_ = Layer(**{**vars(layer), "position": layer.position or placed.get(layer.name)})
                chosen.append(copy_)
        return layers_to_json(chosen)

    def paste_text(self, text: str, offset: Position = (40.0, 40.0)) -> List[str]:
        """Add the layers from clipboard text (renamed where needed); return their new names."""
        try:
            layers = layers_from_json(text)
        except ValueError as exc:
            self._refuse(str(exc))
            return []
        if not layers:
            return []
        for layer in layers:
            try:
                get_spec(layer.type)
            except KeyError as exc:
                self._refuse(f"cannot paste: {exc}")
                return []
        pasted = rename_for_paste(layers, self.network.names())
        occupied = set(layout.effective_positions(self.network).values())
        shift = offset
        while any(p.position and (p.position[0] + shift[0], p.position[1] + shift[1]) in occupied for p in pasted):
            shift = (shift[0] + offset[0], shift[1] + offset[1])
        with self._macro(f"Paste {len(pasted)} layer{'s' if len(pasted) != 1 else ''}"):
            for layer in pasted:
                if layer.position is not None:
                    layer.position = (layer.position[0] + shift[0], layer.position[1] + shift[1])
                self._push(commands.AddLayerCommand(self.document, layer))
        return [layer.name for layer in pasted]
