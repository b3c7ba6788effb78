"""The EDIT tab's parameter scopes: set in the property panel (undoable), shown on shared layers,
counted once, and kept by copy/paste (a named scope keeps sharing; the default scope does not)."""
from __future__ import annotations

import os

import pytest

from tests.gui.support import type_into
from nnconsole.app.edit.clipboard import layers_from_json

pytestmark = pytest.mark.gui


def layer(page, name):
    return page.document.project.network.layer(name)


def test_scope_is_edited_undoably_refused_with_a_slash_and_absent_for_weightless_layers(digits_page):
    page = digits_page
    page.select_layers(["conv1"])
    stack = page.document.undo_stack
    type_into(page, "prop_parameter_scope", "enc/conv")
    field = page.properties.field("parameter_scope")
    assert "must not contain '/'" in field.error_text()
    assert layer(page, "conv1").parameter_scope == "" and stack.count() == 0
    type_into(page, "prop_parameter_scope", "  encoder ")
    assert layer(page, "conv1").parameter_scope == "encoder" and stack.count() == 1
    stack.undo()
    page.flush()
    assert layer(page, "conv1").parameter_scope == ""
    assert page.properties.field("parameter_scope").edit.text() == ""  # the panel follows undo
    page.select_layers(["relu1"])
    assert "parameter_scope" not in page.properties.fields  # a ReLU has no weights to share


def test_copy_paste_keeps_a_named_scope_so_the_copy_shares_and_counts_once(digits_page, tmp_path):
    page = digits_page
    total_before = page.info.total_params
    page.select_layers(["fc2"])
    type_into(page, "prop_parameter_scope", "head")
    text = page.editor.copy_text(["fc2"])
    assert layers_from_json(text)[0].parameter_scope == "head"
    [copy] = page.editor.paste_text(text)
    assert layer(page, copy).parameter_scope == "head"
    assert page.editor.connect_layers("relu3", copy)
    page.flush()
    assert page.info.total_params == total_before  # the pasted copy reads fc2's weights: counted once
    assert not page.info.errors
    node = page.scene.node(copy)
    assert "shares weights with fc2" in node.toolTip() and node.summary.startswith("⇄ head")
    assert page.scene.node("fc1").sharers == []
    page.select_layers([copy])
    assert page.properties.widgets["sharing"].text().startswith("shares weights with fc2")
    counts = {name: page.info.layers[name].n_params for name in ("fc2", copy)}
    assert sorted(counts.values()) == [0, 650]  # W 64x10 + b 10, once
    [second] = [name for name, n in counts.items() if n == 0]
    page.select_layers([second])
    params_text = page.properties.widgets["info:params"].text()  # (findChild may meet the old form)
    other = copy if second == "fc2" else "fc2"
    assert params_text.startswith("0") and f"counted with {other}" in params_text
    if os.environ.get("NNCONSOLE_SCREENSHOTS"):
        page.reveal_layer(second)
        page.grab().save(str(tmp_path / "parameter_scope.png"))
        print("screenshot:", tmp_path / "parameter_scope.png")


def test_copy_paste_of_a_default_scope_layer_gets_its_own_weights(digits_page):
    page = digits_page
    total_before = page.info.total_params
    [copy] = page.editor.paste_text(page.editor.copy_text(["fc2"]))
    assert layer(page, copy).parameter_scope == ""
    assert page.editor.connect_layers("relu3", copy)
    page.flush()
    fc2 = page.info.layers["fc2"].n_params
    assert page.info.total_params == total_before + fc2  # new weights under the copy's own name
    assert page.scene.node(copy).sharers == []


def test_naming_another_layers_scope_shares_its_weights(digits_page):
    page = digits_page
    [copy] = page.editor.paste_text(page.editor.copy_text(["fc2"]))
    page.editor.connect_layers("relu3", copy)
    page.flush()
    total_unshared = page.info.total_params
    page.select_layers([copy])
    type_into(page, "prop_parameter_scope", "fc2")
    assert page.info.total_params == total_unshared - page.info.layers["fc2"].n_params
    assert page.scene.node("fc2").sharers == [copy]
    type_into(page, "prop_parameter_scope", copy)  # its own name is the default: stored empty
    assert layer(page, copy).parameter_scope == ""
