"""The Unit's arguments in the EDIT property panel: one field per value NNC lets a Unit give its network.

NNC lists, under a Unit's Network property, each Argument of that network and each property of the network's
parameters (``Convolution.W.File``, ``...Initializer``, ``...InitializerMultiplier``, ``...LRateMultiplier``). This
box shows the same rows (``network.arguments.unit_argument_rows``): the field holds the Unit's value, empty for
"the network's own" (shown greyed as the placeholder); a value may be ``*Name``, an Argument of the network holding
the Unit. Each edit rewrites the Unit's ``arguments`` (one undo step) through the editor, which checks it.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from PySide6.QtWidgets import QFormLayout, QGroupBox, QLabel, QWidget

from nnconsole.app.widgets.field import CheckedField
from nnconsole.engine.layers.types.unit import format_arguments, parse_arguments
from nnconsole.engine.network.arguments import unit_argument_rows

MAX_ROWS = 400  # a network of hundreds of weighted layers: the first rows, and the arguments text for the rest


class UnitArgumentsBox(QGroupBox):
    """Rows of a Unit's arguments; ``apply(text)`` sets the Unit's whole ``arguments`` text (a message if refused)."""

    def __init__(self, apply: Callable[[str], Optional[str]], parent: Optional[QWidget] = None) -> None:
        super().__init__("Unit arguments (empty: the network's own value)", parent)
        self.setObjectName("unit_arguments")
        self._apply = apply
        self._form = QFormLayout(self)
        self._rows: List[Tuple[str, str, str]] = []
        self._given: Dict[str, str] = {}
        self.fields: Dict[str, CheckedField] = {}
        self.note = QLabel()
        self._rebuild([])

    def refresh(self, arguments: str, network: Any) -> None:
        """Show the rows of ``network`` (the one the Unit runs; None: no rows) with the Unit's ``arguments``."""
        try:
            self._given = parse_arguments(arguments)
        except ValueError:
            self._given = {}
        rows = unit_argument_rows(network)[:MAX_ROWS] if network is not None else []
        if rows != self._rows:
            self._rebuild(rows)
        for key, field in self.fields.items():
            field.set_text(self._given.get(key, ""))
        extra = [k for k in self._given if k not in {r[0] for r in rows}]
        self.note.setText(("Also given (see arguments): " + ", ".join(extra)) if extra else
                          "" if rows else "The network this unit runs has no arguments.")
        self.note.setVisible(bool(self.note.text()))

    def _rebuild(self, rows: List[Tuple[str, str, str]]) -> None:
        while self._form.rowCount():
            self._form.removeRow(0)
        self.fields = {}
        self._rows = rows
        for key, kind, default in rows:
            field = CheckedField(f"unit_arg_{key}", lambda text, k=key: self._set(k, text))
            field.edit.setPlaceholderText(default or "(none)")
            field.edit.setToolTip(f"{key} ({kind}); empty: the network's own value '{default}'. A value may be "
                                  "*Name, an Argument of the network holding this unit.")
            self.fields[key] = field
            label = QLabel(key)
            label.setToolTip(f"{kind}")
            self._form.addRow(label, field)
        self.note = QLabel()
        self.note.setObjectName("unit_arguments_note")
        self.note.setWordWrap(True)
        self.note.setStyleSheet("color: #56606b;")
        self._form.addRow(self.note)

    def _set(self, key: str, text: str) -> Optional[str]:
        given: Mapping[str, str] = dict(self._given)
        value = text.strip()
        if ";" in value or "=" in value:
            return "a value cannot hold ';' or '=' (they separate the arguments)"
        updated = {k: (value if k == key else v) for k, v in given.items() if k != key or value}  # order kept
        if value and key not in updated:
            updated[key] = value
        if updated == given:
            return None
        return self._apply(format_arguments(updated))
