"""The EDIT tab's layer help: what a layer type does, its inputs and parameters (from the layer
registry) and NNC's paper reference with its links, for the selected layer or the palette's type.
"""
from __future__ import annotations

import html
import re
from typing import Any, Optional

from PySide6.QtWidgets import QTextBrowser, QWidget

from nnconsole.app.edit.nnc_references import REFERENCES
from nnconsole.engine.layers import find_spec

URL = re.compile(r"https?://[^\s,]+")


def reference_of(spec: Any) -> str:
    """NNC's reference text for a layer type ('' when its definition names no paper)."""
    return REFERENCES.get(spec.nnc_type or spec.type, "") or REFERENCES.get(spec.type, "")


def linked(text: str) -> str:
    """Escaped text with each URL a link (a trailing full stop stays outside the link)."""
    out, last = [], 0
    for m in URL.finditer(text):
        url = m.group(0).rstrip(".")
        out.append(html.escape(text[last:m.start()]))
        out.append(f"<a href='{html.escape(url, quote=True)}'>{html.escape(url)}</a>")
        last = m.start() + len(url)
    out.append(html.escape(text[last:]))
    return "".join(out).replace("\n", "<br>")


def _inputs_text(spec: Any) -> str:
    lo, hi = spec.n_inputs
    if hi == 0:
        return "none (a data source)"
    if hi is None:
        return f"{lo} or more"
    return str(lo) if lo == hi else f"{lo} to {hi}"


def help_html(type_name: str) -> str:
    """The help page of a layer type (a plain note for a type this build does not know)."""
    spec = find_spec(type_name)
    if spec is None:
        return f"<h3>{html.escape(type_name)}</h3><p>This layer type is not known to this nnconsole.</p>"
    parts = [f"<h3>{html.escape(spec.type)}</h3>",
             f"<p style='color:#56606b'>{html.escape(spec.group)} · inputs: {_inputs_text(spec)}</p>",
             f"<p>{html.escape(spec.doc)}</p>"]
    if spec.params:
        rows = "".join(f"<tr><td><b>{html.escape(p.name)}</b></td><td>{html.escape(repr(p.default))}</td>"
                       f"<td>{html.escape(p.doc)}</td></tr>" for p in spec.params)
        parts.append("<p><b>Parameters</b> (default)</p><table cellspacing='0' cellpadding='3'>"
                     f"{rows}</table>")
    reference = reference_of(spec)
    if reference:
        parts.append(f"<p><b>Reference</b><br>{linked(reference)}</p>")
    return "".join(parts)


class LayerHelp(QTextBrowser):
    """Help for one layer type; links open in the desktop's browser."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("layer_help")
        self.setOpenExternalLinks(True)
        self.type_name = ""
        self.setHtml("<p style='color:#56606b'>Select a layer, or a type in the palette, to read about it.</p>")

    def show_type(self, type_name: Optional[str]) -> None:
        if not type_name or type_name == self.type_name:
            return
        self.type_name = type_name
        self.setHtml(help_html(type_name))
