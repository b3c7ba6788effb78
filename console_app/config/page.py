"""The CONFIG tab: Global Config, Optimizer and Multi-GPU forms bound to the project, and the live plan.

Every edit is an undoable ``SetSettingCommand``; the plan panel recomputes on every settings change
(as the user types). Changing the solver is one undo step that also swaps in that solver's
parameters and, when the learning rate was still the old solver's NNC default, the new solver's NNC
default (a rate the user typed is kept; the status bar and the field's tooltip say which). The
learning-rate label reads "Alpha" for the Adam family, as in NNC.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from PySide6.QtWidgets import QHBoxLayout, QScrollArea, QSplitter, QVBoxLayout, QWidget

from nnconsole.app.config.commands import set_settings
from nnconsole.app.config.fields import FieldSpec, SettingsGroup, form_specs
from nnconsole.app.config.optimizer_list import OptimizerList
from nnconsole.app.config.plan_panel import PlanPanel
from nnconsole.engine.project.schema import ALPHA_SOLVERS, SOLVER_PARAMS, SOLVER_SPECS, form_settings, setting

# The three forms and which schedule types each field matters for: all from the settings schema.
GLOBAL_FIELDS = form_specs("global")
OPTIMIZER_FIELDS = form_specs("optimizer")
MULTI_GPU_FIELDS = form_specs("multi_gpu")
SCHEDULE_FIELDS = {s.path: s.schedules for s in form_settings("optimizer") if s.schedules}


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


class ConfigPage(QWidget):
    """The three CONFIG forms on the left, the plan panel on the right."""

    def __init__(self, document: Any, window: Any = None, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("config_page")
        self.document = document
        self.window_ = window
        self.last_message = ""
        self.global_group = SettingsGroup(document, "Global Config", GLOBAL_FIELDS)
        self.optimizer_group = SettingsGroup(document, "Optimizer", OPTIMIZER_FIELDS)
        self.multi_gpu_group = SettingsGroup(document, "Multi-GPU", MULTI_GPU_FIELDS)
        self.solver_group = SettingsGroup(document, "Solver parameters", [])
        self.groups: List[SettingsGroup] = [self.global_group, self.optimizer_group, self.solver_group,
                                            self.multi_gpu_group]
        # The solver combo needs the macro (solver + its parameters), not a plain field edit.
        solver_combo = self.optimizer_group.editors["optimizer.solver"].widget
        solver_combo.currentTextChanged.disconnect()
        solver_combo.currentTextChanged.connect(self._solver_chosen)

        forms = QWidget()
        left = QVBoxLayout(forms)
        top = QHBoxLayout()
        column = QVBoxLayout()
        column.addWidget(self.global_group)
        column.addWidget(self.multi_gpu_group)
        column.addStretch(1)
        column2 = QVBoxLayout()
        column2.addWidget(self.optimizer_group)
        column2.addWidget(self.solver_group)
        column2.addStretch(1)
        top.addLayout(column, 1)
        top.addLayout(column2, 1)
        left.addLayout(top)
        self.optimizer_list = OptimizerList(document)  # the CONFIG tab's optimizer and the others (issue 17)
        self.optimizer_list.message.connect(self.show_message)
        left.addWidget(self.optimizer_list)
        left.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(forms)
        scroll.setObjectName("config_forms")

        self.plan_panel = PlanPanel()
        splitter = QSplitter()
        splitter.addWidget(scroll)
        splitter.addWidget(self.plan_panel)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)
        splitter.setSizes([760, 560])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(splitter)

        document.settings_changed.connect(self._setting_changed)
        document.reloaded.connect(self.reload)
        document.networks_changed.connect(self.optimizer_list.sync)
        document.path_changed.connect(lambda _path: self.plan_panel.refresh(self.document.project))
        self.reload()

    # ---- document -> view ---------------------------------------------------------------------
    def reload(self) -> None:
        """Rebuild everything from the document (a different project was loaded)."""
        self._rebuild_solver_params()
        for group in self.groups:
            group.sync()
        self._update_states()
        self.optimizer_list.sync()
        self.plan_panel.refresh(self.document.project)

    def _setting_changed(self, dotted: str) -> None:
        if dotted == "optimizer.solver":  # never on solver_params: that would delete the editor being typed in
            self._rebuild_solver_params()
        for group in self.groups:
            group.sync(dotted)
        self.optimizer_list.sync()
        self._update_states()
        self.plan_panel.refresh(self.document.project)

    def _update_states(self) -> None:
        project = self.document.project
        kind = project.optimizer.schedule.type
        for dotted, kinds in SCHEDULE_FIELDS.items():
            self.optimizer_group.set_enabled(dotted, kind in kinds)
        alpha = project.optimizer.solver in ALPHA_SOLVERS
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
        wanted = [f"optimizer.solver_params.{k}" for k in SOLVER_PARAMS.get(solver, {})]
        if list(group.editors) == wanted and wanted:
            return
        while group.form.rowCount():
            group.form.removeRow(0)
        group.editors.clear()
        group.labels.clear()
        defaults = SOLVER_PARAMS.get(solver, {})
        group.setTitle(f"Solver parameters ({solver})")
        for key, default in defaults.items():
            group.add_field(FieldSpec(f"optimizer.solver_params.{key}", "float", key, 0, default=float(default),
                                      tooltip=f"{solver}'s '{key}' (nnabla default {default!r})."))
        group.setVisible(bool(defaults))

    # ---- view -> document ---------------------------------------------------------------------
    def _solver_chosen(self, solver: str) -> None:
        project = self.document.project
        if solver == project.optimizer.solver:
            return
        params = solver_params_for(solver, project.optimizer.solver_params)
        rate, why = learning_rate_on_switch(project.optimizer.solver, solver, project.optimizer.learning_rate)
        set_settings(self.document, {"optimizer.solver": solver, "optimizer.solver_params": params,
                                     "optimizer.learning_rate": rate}, f"Change Solver to {solver}")
        self.show_message(f"Solver {solver}: {why}.")

    def show_message(self, text: str) -> None:
        """Say what a change did on the window's status bar (kept in ``last_message`` for tests)."""
        self.last_message = text
        window = self.window_
        if window is not None and hasattr(window, "statusBar"):
            window.statusBar().showMessage(text, 8000)


def create_page(document: Any, window: Any = None) -> QWidget:
    """Entry point used by the main window: the CONFIG tab for ``document``."""
    return ConfigPage(document, window)
