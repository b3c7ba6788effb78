"""Form editors bound to dotted project settings: edits push undo commands, document changes refresh them.

A ``FieldSpec`` is what an editor needs of a setting (path, kind, label, range, tooltip); ``spec_for``
makes it from the settings schema (engine/project/schema.py), where each setting is declared once. ``SettingsGroup`` builds
one QGroupBox of editors from a list of specs. Editors push ``SetSettingCommand``s as the user types
(so the plan panel follows live) and are refreshed with signals blocked when the document changes,
e.g. on undo. Each editor's objectName is ``field_<dotted path>``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QCheckBox, QComboBox, QFormLayout, QGroupBox, QHBoxLayout, QLabel, QLineEdit,
                               QSpinBox, QWidget)

from nnconsole.app.config.commands import get_path, set_path
from nnconsole.engine.project.schema import BY_PATH, Setting, form_settings

INT_MAX = 2_147_483_647
INVALID_STYLE = "QLineEdit { border: 1px solid #d62728; background: #fff0f0; }"


@dataclass(frozen=True)
class FieldSpec:
    """One setting in a form: ``kind`` is int, float, choice, bool, text, int_list or text_list."""

    dotted: str
    kind: str
    label: str
    minimum: float = 0
    maximum: float = INT_MAX
    choices: Sequence[str] = ()
    tooltip: str = ""
    positive: bool = False  # floats: must be > 0
    default: Any = None  # shown when a dict setting lacks the key (solver parameters)
    beside: str = ""  # the field whose row also holds this editor (a unit selector next to its value)


# Editor kind for each schema kind (choices, paths and mappings differ from the plain widgets).
_EDITOR_KINDS = {"choice": "choice", "path": "text", "int": "int", "float": "float", "bool": "bool",
                 "text": "text", "int_list": "int_list", "text_list": "text_list"}


def spec_for(setting: Setting) -> FieldSpec:
    """The form field of a schema setting: editor kind, label, bounds, choices and tooltip."""
    if setting.kind not in _EDITOR_KINDS:
        raise ValueError(f"{setting.path}: a {setting.kind} setting has no plain editor")
    return FieldSpec(setting.path, _EDITOR_KINDS[setting.kind], setting.label,
                     minimum=setting.minimum if setting.minimum is not None else (-INT_MAX - 1),
                     maximum=setting.maximum if setting.maximum is not None else INT_MAX,
                     choices=setting.choices, tooltip=setting.doc, positive=setting.positive, beside=setting.beside)


def form_specs(form: str) -> List[FieldSpec]:
    """The fields of one form of the schema ("global", "optimizer", "multi_gpu"), in order."""
    return [spec_for(setting) for setting in form_settings(form)]


def format_float(value: float) -> str:
    """Shortest text that reads back as the same float: 0.001, 1e-08, 0.4."""
    return repr(float(value))


def parse_value(spec: FieldSpec, text: str) -> Any:
    """The setting value for an editor's text; raises ValueError when it is not acceptable."""
    text = text.strip()
    if spec.kind == "float":
        value = float(text)
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError("not a finite number")
        if value < spec.minimum or value > spec.maximum or (spec.positive and value <= 0):
            raise ValueError("out of range")
        return value
    if spec.kind == "int_list":
        values = [int(v) for v in text.replace(";", ",").split(",") if v.strip()]
        if any(v < spec.minimum or v > spec.maximum for v in values):
            raise ValueError("out of range")
        return values
    if spec.kind == "text_list":
        return [v.strip() for v in text.split(",") if v.strip()]
    return text


def allowed_values(spec: FieldSpec) -> str:
    """What an editor accepts, in words: the schema's own words for a schema setting ("> 0", ">= 1")."""
    if spec.dotted in BY_PATH and BY_PATH[spec.dotted].allowed():
        allowed = BY_PATH[spec.dotted].allowed()
    else:
        low = "> 0" if spec.positive else (f">= {spec.minimum:g}" if spec.minimum > -INT_MAX - 1 else "")
        allowed = ", ".join(p for p in (low, f"<= {spec.maximum:,.0f}" if spec.maximum < INT_MAX else "") if p)
    what = {"float": "a finite number", "int_list": "whole numbers separated by commas,"}.get(spec.kind, "")
    return " ".join(p for p in (what, allowed) if p)


def format_value(spec: FieldSpec, value: Any) -> str:
    if spec.kind == "float":
        return format_float(value)
    if spec.kind in ("int_list", "text_list"):
        return ", ".join(str(v) for v in value)
    return str(value)


class FieldEditor:
    """One editor widget bound to one setting of a document.

    Text that is not acceptable is shown red and not committed. On leaving the field it is replaced by the
    document's value, unless ``keep_refused`` (a dialog with OK keeps it, to refuse OK naming the field).
    """

    def __init__(self, document: Any, spec: FieldSpec, parent: Optional[QWidget] = None,
                 keep_refused: bool = False) -> None:
        self.document = document
        self.spec = spec
        self.keep_refused = keep_refused
        self._committing = False
        self.widget = self._make(parent)
        self.widget.setObjectName(f"field_{spec.dotted}")
        if spec.tooltip:
            self.widget.setToolTip(spec.tooltip)
        self.sync()

    def _make(self, parent: Optional[QWidget]) -> QWidget:
        spec = self.spec
        if spec.kind == "int":
            w = QSpinBox(parent)
            w.setRange(int(spec.minimum), int(min(spec.maximum, INT_MAX)))
            w.setKeyboardTracking(True)
            w.setAccelerated(True)
            w.valueChanged.connect(lambda v: self._commit(int(v)))
            return w
        if spec.kind == "choice":
            w = QComboBox(parent)
            w.addItems(list(spec.choices))
            w.currentTextChanged.connect(self._commit)
            return w
        if spec.kind == "bool":
            w = QCheckBox(parent)
            w.toggled.connect(lambda v: self._commit(bool(v)))
            return w
        w = QLineEdit(parent)
        w.textEdited.connect(self._text_edited)
        w.editingFinished.connect(self._left)  # show the canonical text once the user leaves the field
        return w

    def _left(self) -> None:
        if not (self.keep_refused and self.problem()):
            self.sync()

    def problem(self) -> str:
        """Why the text now in the editor is not taken ('' when it is, and for editors that are not text)."""
        if not isinstance(self.widget, QLineEdit):
            return ""
        try:
            parse_value(self.spec, self.widget.text())
        except ValueError:
            return f"{self.widget.text().strip()!r} is not accepted: use {allowed_values(self.spec)}"
        return ""

    def _text_edited(self, text: str) -> None:
        try:
            value = parse_value(self.spec, text)
        except ValueError:
            self.widget.setStyleSheet(INVALID_STYLE)
            return
        self.widget.setStyleSheet("")
        self._commit(value)

    def _commit(self, value: Any) -> None:
        self._committing = True  # the document echoes the change back: keep the user's text as typed
        try:
            set_path(self.document, self.spec.dotted, value)
        finally:
            self._committing = False

    def sync(self) -> None:
        """Show the document's value (signals blocked, so this pushes no command)."""
        value = get_path(self.document, self.spec.dotted, self.spec.default)
        w = self.widget
        w.blockSignals(True)
        try:
            if isinstance(w, QSpinBox):
                w.setValue(int(value))
            elif isinstance(w, QComboBox):
                if w.findText(str(value)) < 0:
                    w.addItem(str(value))
                w.setCurrentText(str(value))
            elif isinstance(w, QCheckBox):
                w.setChecked(bool(value))
            else:
                if not self._committing:
                    w.setText(format_value(self.spec, value))
                    w.setStyleSheet("")
        finally:
            w.blockSignals(False)


class SettingsGroup(QGroupBox):
    """A titled form of FieldEditors; ``sync(dotted)`` refreshes one editor or all of them."""

    def __init__(self, document: Any, title: str, specs: List[FieldSpec], parent: Optional[QWidget] = None,
                 keep_refused: bool = False) -> None:
        super().__init__(title, parent)
        self.document = document
        self.keep_refused = keep_refused  # see FieldEditor
        self.form = QFormLayout(self)
        self.form.setFieldGrowthPolicy(QFormLayout.AllNonFixedFieldsGrow)
        self.form.setLabelAlignment(Qt.AlignRight | Qt.AlignVCenter)
        self.editors: Dict[str, FieldEditor] = {}
        self.labels: Dict[str, QLabel] = {}
        for spec in specs:
            self.add_field(spec)

    def add_field(self, spec: FieldSpec) -> FieldEditor:
        editor = FieldEditor(self.document, spec, self, keep_refused=self.keep_refused)
        if spec.beside in self.editors:
            self._put_beside(self.editors[spec.beside], editor)
            self.editors[spec.dotted] = editor
            self.labels[spec.dotted] = self.labels[spec.beside]
            return editor
        label = QLabel(spec.label, self)
        label.setBuddy(editor.widget)
        self.form.addRow(label, editor.widget)
        self.editors[spec.dotted] = editor
        self.labels[spec.dotted] = label
        return editor

    def _put_beside(self, host: FieldEditor, editor: FieldEditor) -> None:
        """Show ``editor`` to the right of ``host`` in host's row (a unit: "LR update interval [3] [epochs]")."""
        row = QWidget(self)
        box = QHBoxLayout(row)
        box.setContentsMargins(0, 0, 0, 0)
        self.form.replaceWidget(host.widget, row)
        box.addWidget(host.widget, 1)
        box.addWidget(editor.widget)
        editor.widget.setAccessibleName(editor.spec.label)

    def sync(self, dotted: Optional[str] = None) -> None:
        for path, editor in self.editors.items():
            if dotted is None or dotted == path or path.startswith(dotted + ".") or dotted.startswith(path + "."):
                editor.sync()

    def set_enabled(self, dotted: str, enabled: bool) -> None:
        self.editors[dotted].widget.setEnabled(enabled)
        self.labels[dotted].setEnabled(enabled)
