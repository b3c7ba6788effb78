"""Small reusable widgets shared by the desktop console's tabs, user text made safe for Qt's rich text
(``rich_text``: escaped, long words wrapped, length capped), engine messages shown as plain text (``message``)
and the one place for theme colours, light or dark (``theme``)."""
