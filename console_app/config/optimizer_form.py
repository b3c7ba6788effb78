"""The Optimizer and Solver-parameters forms for one ``Optimizer`` of a document (the schema's form "optimizer").

The CONFIG tab shows them for the project's first optimizer; the optimizer details dialog shows them for
another optimizer, through a stand-in document whose ``optimizer`` is that optimizer's copy. Either way the
fields come from the settings schema, once. Changing the solver is one undo step that also swaps in that
solver's parameters and, when the learning rate was still the old solver's NNC default, the new solver's NNC
default (a rate the user typed is kept; ``message`` and the field's tooltip say which). The learning-rate label
reads "Alpha" for the Adam family, as in NNC; schedule fields are enabled for the schedule types they matter for.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from PySide6.QtCore import QObject, Signal

from nnconsole.app.config.commands import set_settings
from nnconsole.app.config.fields import FieldSpec, SettingsGroup, form_specs
from nnconsole.engine.project.schema import ALPHA_SOLVERS, SOLVER_PARAMS, SOLVER_SPECS, form_settings, setting

OPTIMIZER_FIELDS = form_specs("optimizer")
# Which schedule types each optimizer field matters for (from the schema).
SCHEDULE_FIELDS = {s.path: s.schedules for s in form_settings("optimizer") if s.schedules}
SOLVER_PARAMS_PREFIX = "optimizer.solver_params."


def solver_params_for(solver: str, current: Dict[str, float]) -> Dict[str, float]:
    """The new solver's parameters: its defaults, keeping values of parameters both solvers share."""
    return {k: float(current.get(k, default)) for k, default in SOLVER_PARAMS.get(solver, {}).items()}


def nnc_default_lr(solver: str) -> float:
    """NNC's default learning rate (Alpha) for ``solver`` (nnabla's 0.001 for a solver NNC lacks)."""
    spec = SOLVER_SPECS.get(solver)
    return spec.nnc_learning_rate if spec is not None else setting("optimizer.learning_rate").default


def learning_rate_on_switch(old_solver: str, new_solver: str, current: float) -> Tuple[float, str]:
    """The learning rate after switching solvers, and the sentence saying why.

    A rate still at the old solver's NNC default was never chosen by the user: it becomes the new solver's
    default (Adam's Alpha 0.001 -> Sgd's 0.01). A rate the user typed is kept.
    """
    new_default = nnc_default_lr(new_solver)
    if current == nnc_default_lr(old_solver):
        if current == new_default:
            return current, f"learning rate {current:g} is {new_solver}'s NNC default too"
        return new_default, (f"learning rate set to {new_solver}'s NNC default {new_default:g} (it was "
                             f"{old_solver}'s default {current:g})")
    return current, (f"learning rate {current:g} kept (you set it; {new_solver}'s NNC default is "
                     f"{new_default:g})")


def solver_param_spec(solver: str, key: str, default: float) -> FieldSpec:
    """The float field of one solver parameter (``optimizer.solver_params.<key>``), nnabla's default shown."""
    return FieldSpec(SOLVER_PARAMS_PREFIX + key, "float", key, 0, default=float(default),
                     tooltip=f"{solver}'s '{key}' (nnabla default {default!r}).")


class OptimizerForm(QObject):
    """The "Optimizer" and "Solver parameters" groups bound to ``document``'s ``optimizer``.

    The owner forwards the document's ``settings_changed`` to ``setting_changed`` and reloads with ``reload``.
    """

    message = Signal(str)  # what a solver switch did to the learning rate

    def __init__(self, document: Any, parent: Optional[QObject] = None, keep_refused: bool = False) -> None:
        super().__init__(parent)
        self.document = document
        self.optimizer_group = SettingsGroup(document, "Optimizer", OPTIMIZER_FIELDS, keep_refused=keep_refused)
        self.solver_group = SettingsGroup(document, "Solver parameters", [], keep_refused=keep_refused)
        # The solver combo needs the macro (solver + its parameters), not a plain field edit.
        solver_combo = self.optimizer_group.editors["optimizer.solver"].widget
        solver_combo.currentTextChanged.disconnect()
        solver_combo.currentTextChanged.connect(self._solver_chosen)

    @property
    def groups(self) -> List[SettingsGroup]:
        return [self.optimizer_group, self.solver_group]

    def reload(self) -> None:
        """Show the document's optimizer again (another project, or a first showing)."""
        self._rebuild_solver_params()
        for group in self.groups:
            group.sync()
        self.update_states()

    def setting_changed(self, dotted: str) -> None:
        if dotted == "optimizer.solver":  # never on solver_params: that would delete the editor being typed in
            self._rebuild_solver_params()
        for group in self.groups:
            group.sync(dotted)
        self.update_states()

    def refused(self) -> List[str]:
        """"<label>: why" for each enabled field whose text is not taken (shown red); a disabled field (a schedule
        type not chosen) shows the value it keeps instead."""
        found: List[str] = []
        for group in self.groups:
            for dotted, editor in group.editors.items():
                problem = editor.problem()
                if problem and not editor.widget.isEnabled():
                    editor.sync()
                elif problem:
                    found.append(f"{group.labels[dotted].text()}: {problem}")
        return found

    def update_states(self) -> None:
        """Enable the schedule fields of the current schedule type; "Alpha" or "Learning rate"; the rate tooltip."""
        optimizer = self.document.project.optimizer
        for dotted, kinds in SCHEDULE_FIELDS.items():
            self.optimizer_group.set_enabled(dotted, optimizer.schedule.type in kinds)
        alpha = optimizer.solver in ALPHA_SOLVERS
        self.optimizer_group.labels["optimizer.learning_rate"].setText("Alpha" if alpha else "Learning rate")
        self._update_learning_rate_tooltip()

    def _update_learning_rate_tooltip(self) -> None:
        """The rate field's tooltip: the schema's text, and whether a solver switch will replace the rate."""
        opt = self.document.project.optimizer
        default = nnc_default_lr(opt.solver)
        if opt.learning_rate == default:
            state = (f"{opt.learning_rate:g} is {opt.solver}'s NNC default: switching solver sets the new "
                     "solver's NNC default.")
        else:
            state = (f"{opt.learning_rate:g} was set by you ({opt.solver}'s NNC default is {default:g}): switching "
                     "solver keeps it.")
        field = self.optimizer_group.editors["optimizer.learning_rate"].widget
        field.setToolTip(f"{setting('optimizer.learning_rate').doc}\n{state}")

    def _rebuild_solver_params(self) -> None:
        """One float field per parameter of the current solver (optimizer.solver_params[key])."""
        group = self.solver_group
        solver = self.document.project.optimizer.solver
        defaults = SOLVER_PARAMS.get(solver, {})
        wanted = [SOLVER_PARAMS_PREFIX + k for k in defaults]
        if list(group.editors) == wanted and wanted:
            return
        while group.form.rowCount():
            group.form.removeRow(0)
        group.editors.clear()
        group.labels.clear()
        group.setTitle(f"Solver parameters ({solver})")
        for key, default in defaults.items():
            group.add_field(solver_param_spec(solver, key, default))
        group.setVisible(bool(defaults))

    def _solver_chosen(self, solver: str) -> None:
        optimizer = self.document.project.optimizer
        if solver == optimizer.solver:
            return
        params = solver_params_for(solver, optimizer.solver_params)
        rate, why = learning_rate_on_switch(optimizer.solver, solver, optimizer.learning_rate)
        set_settings(self.document, {"optimizer.solver": solver, "optimizer.solver_params": params,
                                     "optimizer.learning_rate": rate}, f"Change Solver to {solver}")
        self.message.emit(f"Solver {solver}: {why}.")
