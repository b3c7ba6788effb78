"""Issue 25 item 16 (the GUI's share): pasted text nested 100,000 deep is "not nnconsole layers", not a
RecursionError escaping the paste handler (the clipboard parses through ``rundir.safe_json``)."""
from __future__ import annotations

import pytest

from nnconsole.app.edit.clipboard import layers_from_json


def test_deep_clipboard_text_is_not_layers():
    with pytest.raises(ValueError, match="does not hold nnconsole layers"):
        layers_from_json('{"nnconsole_layers": ' + "[" * 100_000 + "]" * 100_000 + "}")
