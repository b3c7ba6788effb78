"""The property panel's Search box: NNC's per-property Search checkbox, with the range ``nnconsole search`` draws
the property from (``16..128``, ``16..128 step 16``, ``1e-4..1e-1 log`` or choices ``16, 32, 64``).

Ticking a box marks the property searched over a range made from its present value (x1/4 to x2 for a size; the
engine's ``default_range``), which the field beside it then edits; unticking unmarks it. Each change is one undo
step through ``NetworkEditor.set_search`` (an Argument's Value also sets its NNC Search flag). A range that does
not read is refused under the field and the old one stays.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from PySide6.QtWidgets import QCheckBox, QGridLayout, QGroupBox, QLabel, QWidget

from nnconsole.app.widgets.field import CheckedField
from nnconsole.app.widgets.search_range import range_text
from nnconsole.engine.project.searched_properties import (ARGUMENT_VALUE, default_range, property_value,
                                                          searched_props)

SEARCHABLE_KINDS = ("int", "float", "ints")  # properties NNC's structure search can size (and any number)


def searchable(spec: Any) -> List[str]:
    """The properties of a layer type that can be searched: its numbers and lists of numbers, an Argument's Value."""
    if spec is None:
        return []
    if spec.type == "Argument":
        return [ARGUMENT_VALUE]
    return [p.name for p in spec.params if p.kind in SEARCHABLE_KINDS]


class SearchFlagsBox(QGroupBox):
    """One row per searchable property: a Search checkbox and its range. ``apply(prop, text or None)`` makes the
    edit and returns a message when it was refused."""

    def __init__(self, props: List[str], apply: Callable[[str, Optional[str]], Optional[str]],
                 parent: Optional[QWidget] = None) -> None:
        super().__init__("Search (what nnconsole search varies)", parent)
        self.setObjectName("search_flags")
        self.setToolTip("NNC's Search checkbox: a ticked property is varied by 'nnconsole search' (CONFIG > Search) "
                        "over its range, as if the search section listed it")
        self._apply = apply
        self.checks: Dict[str, QCheckBox] = {}
        self.ranges: Dict[str, CheckedField] = {}
        self._layer: Any = None
        grid = QGridLayout(self)
        grid.setHorizontalSpacing(8)
        grid.setColumnStretch(1, 1)
        for row, prop in enumerate(props):
            check = QCheckBox(prop)
            check.setObjectName(f"search_{prop}")
            check.clicked.connect(lambda on, p=prop: self._toggle(p, bool(on)))
            field = CheckedField(f"search_range_{prop}", lambda text, p=prop: self._apply(p, text))
            field.edit.setPlaceholderText("min..max, min..max log, or a, b, c")
            field.edit.setToolTip("16..128 (whole numbers), 16..128 step 16, 1e-4..1e-1 log (log-uniform), or choices "
                                  "16, 32, 64")
            self.checks[prop], self.ranges[prop] = check, field
            grid.addWidget(check, row, 0)
            grid.addWidget(field, row, 1)
        self.note = QLabel()
        self.note.setObjectName("search_flags_note")
        self.note.setWordWrap(True)
        self.note.setStyleSheet("color: #c62828;")
        self.note.hide()
        grid.addWidget(self.note, len(props), 0, 1, 2)

    def refresh(self, layer: Any) -> None:
        """Show ``layer``'s flags and ranges (an unticked row shows the range ticking it would give)."""
        self._layer = layer
        marked = searched_props(layer)
        for prop, check in self.checks.items():
            check.setChecked(prop in marked)
            given = layer.search.get(prop)
            shown = given if given is not None else default_range(property_value(layer, prop))
            self.ranges[prop].set_text(range_text(shown) if shown is not None else "")
            self.ranges[prop].edit.setEnabled(prop in marked)
        self.note.hide()

    def _toggle(self, prop: str, on: bool) -> None:
        text = self.ranges[prop].edit.text().strip() if on else None
        if on and not text:
            self.checks[prop].setChecked(False)
            self.note.setText(f"{prop}: its value gives no range to search; set a number first")
            self.note.show()
            return
        message = self._apply(prop, text)
        if message:
            self.checks[prop].setChecked(not on)
            self.note.setText(message)
            self.note.show()
