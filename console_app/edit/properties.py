"""The property panel: typed editors for the selected layer's name, parameters, NNC's per-property Search
checkboxes (``search_flags``), initializers and learning-rate multipliers, plus what shape inference says about it.

Editors are built when the selection (or the layer's type) changes and only refilled afterwards,
so focus stays where the user is typing. Every change goes through ``NetworkEditor``; a refused
value is explained under its field and the old value stays.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QFormLayout, QGridLayout, QGroupBox, QHBoxLayout, QLabel,
                               QScrollArea, QStackedWidget, QVBoxLayout, QWidget)

from nnconsole.app.edit import style
from nnconsole.app.edit.scopes import sharing_text, weight_sharers
from nnconsole.app.edit.search_flags import SearchFlagsBox, searchable
from nnconsole.app.edit.unit_arguments import UnitArgumentsBox
from nnconsole.app.widgets.field import ERROR_STYLE, CheckedField
from nnconsole.app.widgets.rich_text import bounded, esc
from nnconsole.engine.layers import get_spec
from nnconsole.engine.project.model import INITIALIZERS
from nnconsole.engine.project.structure import all_networks

DEFAULT_HINT = ("Select a layer on the canvas to see and edit its properties.\n\n"
                "Double-click a layer in the palette to add it below the selected one, or drag it "
                "onto the canvas. Drag from a layer's bottom pin to another layer to connect them.")


def value_text(value: Any) -> str:
    """How a parameter value is shown in a text field: [3, 3] -> '3, 3', 1e-05 -> '1e-05'."""
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    if isinstance(value, float):
        return repr(value)
    return "" if value is None else str(value)


class PropertyPanel(QScrollArea):
    """Shows and edits one layer; ``show_layer(None)`` shows a hint instead."""

    edited = Signal()  # an edit was accepted and pushed on the undo stack

    def __init__(self, editor: Any, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("property_panel")
        self.setWidgetResizable(True)
        self.setFrameShape(QScrollArea.NoFrame)
        self.editor = editor
        self.layer_name: Optional[str] = None
        self._built_for: Optional[tuple] = None
        self.fields: Dict[str, CheckedField] = {}
        self.widgets: Dict[str, QWidget] = {}
        self.weights_error: Optional[QLabel] = None
        self._stack = QStackedWidget()
        self.hint = QLabel(DEFAULT_HINT)
        self.hint.setObjectName("property_hint")
        self.hint.setWordWrap(True)
        self.hint.setAlignment(Qt.AlignTop | Qt.AlignLeft)
        self.hint.setStyleSheet("color: #56606b; padding: 12px;")
        self._stack.addWidget(self.hint)
        self._form_host = QWidget()
        self._stack.addWidget(self._form_host)
        self.setWidget(self._stack)

    # ---- public --------------------------------------------------------------------------------
    def show_layer(self, name: Optional[str], info: Any = None, hint: str = "") -> None:
        network = self.editor.network
        if name is None or name not in network.names():
            self.layer_name = None
            self._built_for = None
            self.hint.setText(hint or DEFAULT_HINT)
            self._stack.setCurrentWidget(self.hint)
            return
        layer = network.layer(name)
        key = (name, layer.type)
        if key != self._built_for:
            self._build(name, layer.type)
            self._built_for = key
        self.layer_name = name
        self._fill(info)
        self._stack.setCurrentWidget(self._form_host)

    def field(self, name: str) -> CheckedField:
        return self.fields[name]

    # ---- building --------------------------------------------------------------------------------
    def _build(self, name: str, type_name: str) -> None:
        old = self._form_host
        self._form_host = QWidget()
        self.fields, self.widgets = {}, {}
        self.weights_error: Optional[QLabel] = None
        outer = QVBoxLayout(self._form_host)
        outer.setContentsMargins(10, 10, 10, 10)
        outer.setSpacing(10)
        try:
            spec = get_spec(type_name)
        except KeyError:
            spec = None
        fill, accent = style.group_colors(spec.group if spec else None)
        header = QLabel()
        header.setObjectName("prop_header")
        header.setTextFormat(Qt.RichText)
        header.setWordWrap(True)
        header.setStyleSheet(f"background: {fill.name()}; border-left: 5px solid {accent.name()}; "
                             "border-radius: 4px; padding: 6px 8px;")
        doc = spec.doc if spec else "unknown layer type"
        header.setText(f"<b>{esc(bounded(type_name, 200))}</b> <span style='color:#56606b'>· {spec.group if spec else '?'}</span>"
                       f"<br><span style='color:#3b4652'>{doc}</span>")
        outer.addWidget(header)
        general = QFormLayout()
        general.setLabelAlignment(Qt.AlignRight | Qt.AlignTop)
        self.fields["name"] = CheckedField("prop_name", lambda text: self._apply_rename(text))
        general.addRow("Name", self.fields["name"])
        if spec is not None and spec.weights:
            scope = CheckedField("prop_parameter_scope", lambda text: self._apply_scope(text))
            scope.edit.setToolTip("NNC's ParameterScope: where this layer's weights live (empty = the layer's "
                                  "name). Layers naming the same scope share one set of weights.")
            self.fields["parameter_scope"] = scope
            general.addRow("Parameter scope", scope)
            sharing = QLabel()
            sharing.setObjectName("prop_sharing")
            sharing.setWordWrap(True)
            sharing.setStyleSheet("color: #1565c0;")
            self.widgets["sharing"] = sharing
            general.addRow(sharing)
        outer.addLayout(general)
        if spec is not None and spec.params:
            outer.addWidget(self._params_box(spec))
        if searchable(spec):  # NNC's Search checkbox per property, with its range
            self.widgets["search_flags"] = SearchFlagsBox(searchable(spec), self._apply_search)
            outer.addWidget(self.widgets["search_flags"])
        if type_name == "Unit":  # NNC's Unit properties: its network's Arguments and parameter properties
            self.widgets["unit_arguments"] = UnitArgumentsBox(lambda text: self._apply_param("arguments", text))
            outer.addWidget(self.widgets["unit_arguments"])
        if spec is not None and spec.weights:
            outer.addWidget(self._weights_box(spec))
        outer.addWidget(self._shapes_box())
        outer.addStretch(1)
        self._stack.insertWidget(1, self._form_host)
        self._stack.removeWidget(old)
        old.deleteLater()

    def _params_box(self, spec: Any) -> QGroupBox:
        box = QGroupBox("Parameters")
        form = QFormLayout(box)
        form.setLabelAlignment(Qt.AlignRight | Qt.AlignVCenter)
        for p in spec.params:
            label = QLabel(p.name)
            label.setToolTip(p.doc)
            if p.kind == "enum" or (spec.type == "Unit" and p.name == "network"):  # a Unit picks a network
                combo = QComboBox()
                combo.setObjectName(f"param_{p.name}")
                combo.addItems([str(c) for c in p.choices])
                combo.activated.connect(lambda _i, k=p.name, c=combo: self._apply_param(k, c.currentText()))
                combo.setToolTip(p.doc)
                self.widgets[p.name] = combo
                form.addRow(label, combo)
            elif p.kind == "bool":
                check = QCheckBox()
                check.setObjectName(f"param_{p.name}")
                check.setToolTip(p.doc)
                check.clicked.connect(lambda on, k=p.name: self._apply_param(k, bool(on)))
                self.widgets[p.name] = check
                macro = CheckedField(f"param_macro_{p.name}", lambda text, k=p.name: self._apply_macro(k, text))
                macro.edit.setPlaceholderText("or *Argument")
                macro.edit.setToolTip("NNC's macro: *Name takes the value of this network's Argument 'Name' (set by "
                                      "the Unit that runs the network); empty: the box's value")
                self.fields[f"macro:{p.name}"] = macro
                row = QWidget()
                line = QHBoxLayout(row)
                line.setContentsMargins(0, 0, 0, 0)
                line.addWidget(check)
                line.addWidget(macro, 1)
                form.addRow(label, row)
            else:
                field = CheckedField(f"param_{p.name}", lambda text, k=p.name: self._apply_param(k, text))
                field.edit.setToolTip(p.doc + (" (comma-separated integers)" if p.kind == "ints" else ""))
                self.fields[f"param:{p.name}"] = field
                form.addRow(label, field)
        return box

    def _weights_box(self, spec: Any) -> QGroupBox:
        box = QGroupBox("Weights: initializer and learning-rate multiplier")
        grid = QGridLayout(box)
        grid.setHorizontalSpacing(6)
        for col, title in enumerate(("", "initializer", "multiplier", "value", "LR ×")):
            head = QLabel(title)
            head.setStyleSheet("color: #56606b;")
            grid.addWidget(head, 0, col)
        row = 1
        for key in spec.weights:
            grid.addWidget(QLabel(f"<b>{key}</b>"), row, 0)
            combo = QComboBox()
            combo.setObjectName(f"init_type_{key}")
            combo.addItems(list(INITIALIZERS))
            combo.activated.connect(lambda _i, k=key, c=combo: self._apply_init(k, type=c.currentText()))
            self.widgets[f"init_type:{key}"] = combo
            grid.addWidget(combo, row, 1)
            for col, (part, tip) in enumerate((("multiplier", "scales the standard deviation (ignored by Constant)"),
                                                ("value", "the value of a Constant initializer")), start=2):
                field = CheckedField(f"init_{part}_{key}",
                                     lambda text, k=key, part=part: self._apply_init(k, **{part: text}),
                                     show_error=False)  # this row's errors show once, under the grid
                field.edit.setToolTip(tip)
                field.edit.setMaximumWidth(70)
                field.value_refused.connect(lambda msg, k=key: self._show_weight_error(k, msg))
                self.fields[f"init_{part}:{key}"] = field
                grid.addWidget(field, row, col)
            lr = CheckedField(f"lr_{key}", lambda text, k=key: self._apply_lr(k, text), show_error=False)
            lr.edit.setToolTip("learning-rate multiplier for this weight (0 freezes it)")
            lr.edit.setMaximumWidth(56)
            lr.value_refused.connect(lambda msg, k=key: self._show_weight_error(k, msg))
            self.fields[f"lr:{key}"] = lr
            grid.addWidget(lr, row, 4)
            row += 1
        self.weights_error = QLabel()
        self.weights_error.setObjectName("weights_error")
        self.weights_error.setWordWrap(True)
        self.weights_error.setStyleSheet(ERROR_STYLE)
        self.weights_error.hide()
        grid.addWidget(self.weights_error, row, 0, 1, 5)
        return box

    def _shapes_box(self) -> QGroupBox:
        box = QGroupBox("Shapes and cost (per sample)")
        form = QFormLayout(box)
        form.setLabelAlignment(Qt.AlignRight)
        for key, title in (("inputs", "Inputs"), ("output", "Output"), ("params", "Parameters"),
                           ("macs", "Multiply-adds")):
            label = QLabel()
            label.setObjectName(f"prop_{key}")
            label.setTextInteractionFlags(Qt.TextSelectableByMouse)
            label.setWordWrap(True)
            self.widgets[f"info:{key}"] = label
            form.addRow(title, label)
        problem = QLabel()
        problem.setObjectName("prop_error")
        problem.setWordWrap(True)
        problem.setStyleSheet(ERROR_STYLE)
        self.widgets["info:error"] = problem
        form.addRow(problem)
        return box

    # ---- filling ---------------------------------------------------------------------------------
    def _fill(self, info: Any) -> None:
        layer = self.editor.network.layer(self.layer_name)
        self.fields["name"].set_text(layer.name)
        sharers = weight_sharers(self.editor.network).get(layer.name, [])
        if "parameter_scope" in self.fields:
            self.fields["parameter_scope"].set_text(layer.parameter_scope)
            self.fields["parameter_scope"].edit.setPlaceholderText(f"{layer.name} (the layer's name)")
            self.widgets["sharing"].setText(sharing_text(sharers) + (" (its parameters are counted once)"
                                                                     if sharers else ""))
            self.widgets["sharing"].setVisible(bool(sharers))
        try:
            spec = get_spec(layer.type)
        except KeyError:
            spec = None
        layer_info = info.layers.get(layer.name) if info is not None else None
        arguments = any(x.type == "Argument" for x in self.editor.network.layers)
        if spec is not None:
            for p in spec.params:
                value = layer.params.get(p.name, p.default)
                if spec.type == "Unit" and p.name == "network":  # the project's networks but the one edited
                    self._fill_networks(self.widgets[p.name], str(value))
                elif p.kind == "enum":
                    combo = self.widgets[p.name]
                    combo.setCurrentText(str(value))
                elif p.kind == "bool":  # a value or a macro naming an Argument ('*ConvBS')
                    named = isinstance(value, str)
                    self.widgets[p.name].setChecked(bool(value) if not named else False)
                    self.widgets[p.name].setEnabled(not named)
                    self.fields[f"macro:{p.name}"].set_text(value if named else "")
                    self.fields[f"macro:{p.name}"].setVisible(named or arguments)
                else:
                    self.fields[f"param:{p.name}"].set_text(value_text(value))
            for key in spec.weights:
                init = self.editor.effective_initializer(layer.name, key)
                self.widgets[f"init_type:{key}"].setCurrentText(init.type)
                self.fields[f"init_multiplier:{key}"].set_text(value_text(float(init.multiplier)))
                value_field = self.fields[f"init_value:{key}"]
                value_field.set_text(value_text(float(init.value)))
                value_field.edit.setEnabled(init.type == "Constant")
                self.fields[f"init_multiplier:{key}"].edit.setEnabled(init.type != "Constant")
                self.fields[f"lr:{key}"].set_text(value_text(float(layer.lr_multipliers.get(key, 1.0))))
        if "search_flags" in self.widgets:
            self.widgets["search_flags"].refresh(layer)
        if "unit_arguments" in self.widgets:
            target = all_networks(self.editor.document.project).get(str(layer.params.get("network", "")))
            self.widgets["unit_arguments"].refresh(str(layer.params.get("arguments", "") or ""), target)
        self._fill_info(layer, layer_info, sharers)
        if layer.type == "Unit" and info is not None and layer_info is not None:  # the unit's layers together
            inner = [li for n, li in info.layers.items() if n == layer.name or n.startswith(layer.name + "/")]
            self.widgets["info:params"].setText(f"{sum(li.n_params for li in inner):,}  (its {len(inner)} layers)")
            self.widgets["info:macs"].setText(f"{sum(li.macs for li in inner):,}")

    def _fill_networks(self, combo: QComboBox, current: str) -> None:
        """The networks a Unit can run: every network of the project but the one being edited (a unit cannot
        contain itself); a name the project lacks stays shown so the error under the form makes sense."""
        document = self.editor.document
        names = [n for n in all_networks(document.project) if n != document.active_network]
        if current and current not in names:
            names.append(current)
        combo.blockSignals(True)
        combo.clear()
        combo.addItems(names)
        combo.setCurrentText(current)
        if not current:
            combo.setCurrentIndex(-1)
        combo.blockSignals(False)

    def _fill_info(self, layer: Any, li: Any, sharers: List[str]) -> None:
        w = self.widgets
        if li is None:
            for key in ("inputs", "output", "params", "macs"):
                w[f"info:{key}"].setText("—")
            w["info:error"].setText("")
            return
        ins: List[str] = []
        for i, src in enumerate(layer.inputs):
            shape = li.in_shapes[i] if i < len(li.in_shapes) else None
            ins.append(f"{src}: {style.fmt_dims(shape) if shape is not None else '?'}")
        w["info:inputs"].setText("\n".join(ins) or "none")
        w["info:output"].setText(style.fmt_dims(li.out_shape) if li.out_shape is not None else "unknown")
        weights = ", ".join(f"{k} {style.fmt_dims(s)}" for k, s in li.weight_shapes.items())
        counted = f"{li.n_params:,}" + (f"  ({weights})" if weights else "")
        if sharers and not li.n_params and weights:
            counted += f"; shared, counted with {sharers[0]}"
        w["info:params"].setText(counted)
        w["info:macs"].setText(f"{li.macs:,}")
        w["info:error"].setText(li.error or "")
        w["info:error"].setVisible(bool(li.error))

    # ---- applying ----------------------------------------------------------------------------------
    def _done(self, message: Optional[str]) -> Optional[str]:
        if not message:
            self.edited.emit()
        return message

    def _apply_rename(self, text: str) -> Optional[str]:
        if self.layer_name is None:
            return None
        message = self.editor.rename(self.layer_name, text)
        if not message:
            self.layer_name = text.strip()
            self._built_for = (self.layer_name, self._built_for[1]) if self._built_for else None
        return self._done(message)

    def _apply_param(self, key: str, value: Any) -> Optional[str]:
        if self.layer_name is None:
            return None
        return self._done(self.editor.set_param(self.layer_name, key, value))

    def _apply_search(self, key: str, text: Optional[str]) -> Optional[str]:
        if self.layer_name is None:
            return None
        return self._done(self.editor.set_search(self.layer_name, key, text))

    def _apply_macro(self, key: str, text: str) -> Optional[str]:
        """A Boolean property's macro field: '*Name' names an Argument; empty goes back to the box's value."""
        if not text.strip():
            return self._apply_param(key, bool(self.widgets[key].isChecked()))
        return self._apply_param(key, text)

    def _apply_scope(self, text: str) -> Optional[str]:
        if self.layer_name is None:
            return None
        return self._done(self.editor.set_parameter_scope(self.layer_name, text))

    def _apply_init(self, key: str, **change: Any) -> Optional[str]:
        if self.layer_name is None:
            return None
        message = self.editor.set_initializer(self.layer_name, key, **change)
        if not message and self.weights_error is not None:
            self.weights_error.hide()
        return self._done(message)

    def _apply_lr(self, key: str, text: str) -> Optional[str]:
        if self.layer_name is None:
            return None
        message = self.editor.set_lr_multiplier(self.layer_name, key, text)
        if not message and self.weights_error is not None:
            self.weights_error.hide()
        return self._done(message)

    def _show_weight_error(self, key: str, message: str) -> None:
        self.weights_error.setText(f"{key}: {message}; the old value was kept")
        self.weights_error.show()
