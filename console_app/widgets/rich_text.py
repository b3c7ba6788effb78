"""User text in Qt's rich text: escaped, and bounded so that laying it out stays quick.

Qt renders a tooltip (and a label set to rich text) as HTML whenever it looks like HTML: a layer named
``<img src=...>`` or ``<b>`` put into a tooltip unescaped is rendered, not shown. And a tooltip or a text
document lays out every character it is given: an unbroken 1 MB word takes minutes. Every string a user
(or a project file) chose goes through ``esc`` when it is put into rich text, and a tooltip made of user
text comes from ``plain_tooltip``, which shows it as typed, breaks long words and caps its length.
"""
from __future__ import annotations

import html
import re

TOOLTIP_CHARS = 2000  # a tooltip shows at most this many characters of a user's text (then says how many more)
WORD_CHARS = 60  # a longer unbroken run gets break opportunities, so the tooltip wraps instead of growing wide
_BREAK = "\u200b"  # zero-width space: where Qt may wrap a long word; shows nothing
_LONG_WORD = re.compile(r"\S{%d}" % WORD_CHARS)


def esc(text: object) -> str:
    """``text`` as HTML that shows it as typed: ``<b>`` and ``&`` are shown, never read as markup."""
    return html.escape(str(text), quote=False)


def bounded(text: str, limit: int = TOOLTIP_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how many were left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} more characters)"


def breakable(text: str) -> str:
    """``text`` with a zero-width break after every ``WORD_CHARS`` characters of an unbroken run."""
    return _LONG_WORD.sub(lambda m: m.group(0) + _BREAK, text)


def plain_tooltip(text: str, limit: int = TOOLTIP_CHARS) -> str:
    """A tooltip that shows ``text`` as typed (never as HTML), line breaks kept, long words wrapped, capped."""
    return "<p style='white-space:pre-wrap'>" + esc(breakable(bounded(text, limit))) + "</p>"
