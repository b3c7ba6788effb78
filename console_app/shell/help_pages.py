"""The Help menu's pages, shown in the app (no browser needed): the getting-started guide, the layer
reference, the keyboard shortcuts and what an error means.

Each page is made from the one place that knows it: the guide is ``docs/getting-started.md`` (when the docs
are installed beside the package, as in a source checkout), the layer reference comes from the layer
registry (the same text as the EDIT tab's Layer Help), the shortcuts from the window's own actions, and the
error page from ``nnconsole.engine.errors`` (exit codes and their meanings). Error dialogs link to the error
page (``dialogs.show_error``'s "What does this mean?").
"""
from __future__ import annotations

import html
import os
from typing import Any, Dict, Optional

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QTextBrowser, QVBoxLayout, QWidget

from nnconsole.app.edit.layer_help import help_html
from nnconsole.engine.errors import EXIT_CODE_MEANINGS, ExitCode
from nnconsole.engine.layers import GROUPS, all_specs

DOCS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "docs")
TITLES = {"getting-started": "Getting Started", "layers": "Layer Reference", "shortcuts": "Keyboard Shortcuts",
          "errors": "What an Error Means"}


def getting_started() -> str:
    """The guide's Markdown (a note saying where it is when the docs are not installed)."""
    path = os.path.join(DOCS, "getting-started.md")
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return ("# Getting started\n\nThe guide is docs/getting-started.md in nnconsole's source; this installation "
                "does not include the docs folder.\n\nIn short: File > New Project from Template, look at the "
                "network in EDIT and the datasets in DATASET, press Run in TRAINING, then open EVALUATION.")


def layer_reference() -> str:
    """Every layer type by palette group, with its parameters and reference (HTML)."""
    specs = all_specs()
    parts = ["<h2>Layer reference</h2><p>Every layer type this nnconsole knows, by palette group. The EDIT tab's "
             "Layer Help shows the same for the selected layer.</p>"]
    for group in GROUPS:
        members = [s for s in specs if s.group == group]
        if not members:
            continue
        parts.append(f"<h2 id='{html.escape(group)}'>{html.escape(group)}</h2>")
        parts.extend(help_html(s.type) for s in members)
    return "".join(parts)


def shortcuts(actions: Dict[str, Any]) -> str:
    """The window's actions that have a keyboard shortcut, as a table (HTML)."""
    rows = []
    for action in actions.values():
        keys = ", ".join(k.toString() for k in action.shortcuts() if not k.isEmpty())
        if keys:
            rows.append((action.text().replace("&", "").rstrip("…."), keys))
    body = "".join(f"<tr><td>{html.escape(text)}</td><td><b>{html.escape(keys)}</b></td></tr>"
                   for text, keys in sorted(set(rows)))
    return ("<h2>Keyboard shortcuts</h2><table cellspacing='0' cellpadding='4'>"
            f"<tr><th align='left'>Command</th><th align='left'>Keys</th></tr>{body}</table>"
            "<p>On the canvas: the mouse wheel scrolls, Ctrl+wheel zooms, a drag from a layer's bottom pin to "
            "another layer connects them.</p>")


def errors_page() -> str:
    """What nnconsole's messages and exit codes mean, and where to look next (HTML)."""
    rows = "".join(f"<tr><td><b>{int(code)}</b></td><td>{html.escape(code.name)}</td>"
                   f"<td>{html.escape(EXIT_CODE_MEANINGS.get(code, ''))}</td></tr>" for code in ExitCode)
    return ("<h2>What an error means</h2>"
            "<p>Every problem nnconsole can name is said in one line: the <b>file</b> (and line), the <b>field</b> "
            "(a YAML path such as <code>network.layers[3].params.kernel</code>, or a layer's name) and the "
            "<b>fix</b>. Nothing you made is overwritten when something is refused.</p>"
            "<ul><li><b>A project problem</b> (Run lists them under Problems): double-click one to go to its "
            "layer, dataset or setting.</li>"
            "<li><b>A dataset problem</b>: DATASET shows which variable of which CSV does not match the network.</li>"
            "<li><b>A failed run</b>: TRAINING's log pane shows train.log and each worker's error; the run's "
            "folder keeps <code>logs/rank&lt;N&gt;.error.json</code>.</li>"
            "<li><b>An unexpected error</b> (a bug): the dialog names <code>gui-errors.log</code>; please attach "
            "it to a bug report.</li></ul>"
            "<h3>Exit codes of nnconsole commands (and of runs)</h3>"
            f"<table cellspacing='0' cellpadding='4'><tr><th align='left'>Code</th><th align='left'>Name</th>"
            f"<th align='left'>Meaning</th></tr>{rows}</table>"
            "<p>The same codes are shown by TRAINING for a run that ended and returned by <code>nnconsole train"
            "</code>, <code>evaluate</code>, <code>infer</code> and the other commands.</p>")


class HelpWindow(QDialog):
    """One window for the help pages (not modal: it stays open beside the work)."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("help_window")
        self.resize(760, 600)
        self.browser = QTextBrowser()
        self.browser.setObjectName("help_browser")
        self.browser.setOpenExternalLinks(True)
        buttons = QDialogButtonBox(QDialogButtonBox.Close)
        buttons.rejected.connect(self.close)
        box = QVBoxLayout(self)
        box.addWidget(self.browser)
        box.addWidget(buttons)
        self.page = ""

    def show_page(self, name: str, actions: Optional[Dict[str, Any]] = None) -> None:
        """Show page ``name`` (one of TITLES)."""
        self.page = name
        self.setWindowTitle(f"{TITLES[name]} — nnconsole")
        if name == "getting-started":
            self.browser.setMarkdown(getting_started())
        elif name == "layers":
            self.browser.setHtml(layer_reference())
        elif name == "shortcuts":
            self.browser.setHtml(shortcuts(actions or {}))
        else:
            self.browser.setHtml(errors_page())
        self.show()
        self.raise_()


_WINDOW: Optional[HelpWindow] = None


def open_help(name: str, parent: Optional[QWidget] = None, actions: Optional[Dict[str, Any]] = None) -> HelpWindow:
    """Show a help page in the app's one help window (made on first use)."""
    global _WINDOW
    try:
        if _WINDOW is not None:
            _WINDOW.isVisible()  # raises when Qt deleted it with its parent
    except RuntimeError:
        _WINDOW = None
    if _WINDOW is None:
        _WINDOW = HelpWindow(parent)
    _WINDOW.show_page(name, actions)
    return _WINDOW
