"""Small reusable widgets shared by the desktop console's tabs, and user text made safe for Qt's rich text
(``rich_text``: escaped, long words wrapped, length capped)."""
