"""The CONFIG tab: Global Config, Optimizer and Multi-GPU forms bound to the project, and the live plan.

Every edit is an undoable ``SetSettingCommand``; the plan panel recomputes on every settings change
(as the user types). The Optimizer and Solver-parameters forms (solver switches, "Alpha", schedule
fields) are ``OptimizerForm``'s, shared with the optimizer details dialog of the other optimizers.
"""
from __future__ import annotations

from typing import Any, List, Optional

from PySide6.QtWidgets import QHBoxLayout, QScrollArea, QSplitter, QVBoxLayout, QWidget

from nnconsole.app.config.fields import SettingsGroup, form_specs
from nnconsole.app.config.optimizer_form import (OPTIMIZER_FIELDS, SCHEDULE_FIELDS,  # noqa: F401 (re-exported)
                                                 OptimizerForm, learning_rate_on_switch, nnc_default_lr,
                                                 solver_params_for)
from nnconsole.app.config.optimizer_list import OptimizerList
from nnconsole.app.config.plan_panel import PlanPanel
from nnconsole.app.config.search_launch import SearchLaunch
from nnconsole.app.config.search_section import SearchSection

# The Global Config and Multi-GPU forms, from the settings schema (the Optimizer form is OptimizerForm's).
GLOBAL_FIELDS = form_specs("global")
MULTI_GPU_FIELDS = form_specs("multi_gpu")


class ConfigPage(QWidget):
    """The three CONFIG forms on the left, the plan panel on the right."""

    def __init__(self, document: Any, window: Any = None, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("config_page")
        self.document = document
        self.window_ = window
        self.last_message = ""
        self.global_group = SettingsGroup(document, "Global Config", GLOBAL_FIELDS)
        self.optimizer_form = OptimizerForm(document, self)
        self.optimizer_form.message.connect(self.show_message)
        self.optimizer_group = self.optimizer_form.optimizer_group
        self.solver_group = self.optimizer_form.solver_group
        self.multi_gpu_group = SettingsGroup(document, "Multi-GPU", MULTI_GPU_FIELDS)
        self.groups: List[SettingsGroup] = [self.global_group, self.optimizer_group, self.solver_group,
                                            self.multi_gpu_group]

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
        self.search_section = SearchSection(document)  # the project's search section (issue 29)
        self.search_launch = SearchLaunch(document)
        left.addWidget(self.search_section)
        left.addWidget(self.search_launch)
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
        for signal in (document.network_changed, document.layer_changed, document.networks_changed):
            signal.connect(self._sync_flags)  # properties marked searched in EDIT
        document.path_changed.connect(lambda _path: self.plan_panel.refresh(self.document.project))
        self.reload()

    # ---- document -> view ---------------------------------------------------------------------
    def reload(self) -> None:
        """Rebuild everything from the document (a different project was loaded)."""
        for group in (self.global_group, self.multi_gpu_group):
            group.sync()
        self.optimizer_form.reload()
        self.optimizer_list.sync()
        self._sync_search()
        self.plan_panel.refresh(self.document.project)

    def _sync_search(self) -> None:
        self.search_section.sync()
        self.search_launch.sync()

    def _sync_flags(self, *_args: object) -> None:
        self.search_section.sync_flags()
        self.search_launch.sync()

    def _setting_changed(self, dotted: str) -> None:
        for group in (self.global_group, self.multi_gpu_group):
            group.sync(dotted)
        self.optimizer_form.setting_changed(dotted)
        self.optimizer_list.sync()
        if dotted == "search" or dotted.startswith("search."):
            self._sync_search()
        self.plan_panel.refresh(self.document.project)

    # ---- view -> document ---------------------------------------------------------------------
    def show_message(self, text: str) -> None:
        """Say what a change did on the window's status bar (kept in ``last_message`` for tests)."""
        self.last_message = text
        window = self.window_
        if window is not None and hasattr(window, "statusBar"):
            window.statusBar().showMessage(text, 8000)


def create_page(document: Any, window: Any = None) -> QWidget:
    """Entry point used by the main window: the CONFIG tab for ``document``."""
    return ConfigPage(document, window)
