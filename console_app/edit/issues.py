"""The issues list under the canvas: every error and warning shape inference (and the settings
checks) report, with the layer it belongs to; activating a row selects that layer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Optional

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QLabel, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from nnconsole.app.widgets.rich_text import plain_tooltip
from nnconsole.engine.project.model import Project

ERROR, WARNING = "error", "warning"


@dataclass(frozen=True)
class Issue:
    severity: str  # error | warning
    layer: str  # "" for the whole network or a setting path such as "config.batch_size"
    message: str


def collect_issues(project: Project, info: Any) -> List[Issue]:
    """Errors and warnings for the EDIT tab: the network's, then the training settings'."""
    from nnconsole.engine.check.structure import check_structure
    from nnconsole.engine.check.validate import check_settings

    issues = [Issue(ERROR, name, message) for name, message in info.errors]
    issues += [Issue(WARNING, name, message) for name, message in info.warnings]
    if (info.order or info.errors) and not info.loss_layers:  # the network shown (Main or another, issue 17)
        issues.append(Issue(WARNING, "", "the network has no loss layer, so it cannot be trained; add e.g. "
                                         "SoftmaxCrossEntropy fed by the output and the label Input"))
    # the other networks and optimizers (a layer's own problem shows when its network is shown)
    structure = [p for p in check_structure(project) if ".layers" not in p.path]
    for problem in check_settings(project) + structure:
        issues.append(Issue(ERROR if problem.severity == "error" else WARNING, problem.path,
                            problem.message + (f" ({problem.fix})" if problem.fix else "")))
    return issues


class IssuesPanel(QWidget):
    """A title with counts and a list of issues."""

    layer_activated = Signal(str)  # a row naming a layer was activated

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("issues_panel")
        self.title = QLabel("Issues")
        self.title.setObjectName("issues_title")
        self.title.setStyleSheet("font-weight: bold; padding: 2px 4px;")
        self.list = QTreeWidget(self)
        self.list.setObjectName("issues_list")
        self.list.setHeaderLabels(["", "Layer", "Problem"])
        self.list.setRootIsDecorated(False)
        self.list.setAlternatingRowColors(True)
        self.list.setColumnWidth(0, 70)
        self.list.setColumnWidth(1, 130)
        self.list.setWordWrap(True)
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(2)
        box.addWidget(self.title)
        box.addWidget(self.list)
        self.issues: List[Issue] = []
        self.list.itemActivated.connect(self._activated)
        self.list.itemClicked.connect(self._activated)

    def set_issues(self, issues: List[Issue]) -> None:
        self.issues = list(issues)
        self.list.clear()
        for issue in self.issues:
            row = QTreeWidgetItem([issue.severity, issue.layer or "network", issue.message])
            color = QColor("#c62828") if issue.severity == ERROR else QColor("#a86400")
            row.setForeground(0, QBrush(color))
            row.setToolTip(2, plain_tooltip(issue.message))  # it quotes layer names: shown, never rendered
            row.setData(0, Qt.UserRole, issue.layer)
            self.list.addTopLevelItem(row)
        errors = sum(1 for i in self.issues if i.severity == ERROR)
        warnings = len(self.issues) - errors
        if not self.issues:
            self.title.setText("Issues — none: the network checks out")
        else:
            parts = [f"{errors} error{'s' if errors != 1 else ''}"] if errors else []
            parts += [f"{warnings} warning{'s' if warnings != 1 else ''}"] if warnings else []
            self.title.setText("Issues — " + ", ".join(parts))

    def _activated(self, item: QTreeWidgetItem, column: int = 0) -> None:
        layer = item.data(0, Qt.UserRole)
        if layer:
            self.layer_activated.emit(layer)  # the page ignores names that are not layers
