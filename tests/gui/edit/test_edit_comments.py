"""NNC's Comments on the EDIT canvas: drawn as sticky notes from the model, moved, rewritten, added and deleted
as undo steps, kept through saves and .sdcproj exports, and safe with hostile texts and positions."""
from __future__ import annotations

import copy

import pytest
from PySide6.QtCore import QPoint, QPointF, Qt, QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QDialog, QGraphicsItem, QPlainTextEdit

from tests.gui.support import scene_point
from nnconsole.engine.project.model import Comment

pytestmark = pytest.mark.gui


def net(page):
    return page.document.network


def notes(page):
    """The canvas notes (any item that is not a layer, link, pin or frame and shows a comment's text)."""
    return [i for i in page.scene.items() if type(i).__name__ == "CommentItem"]


def note(page, index):
    return next(i for i in notes(page) if i.index == index)


def with_comments(page, comments):
    """Give the shown network ``comments`` as a loaded project would have them (no undo step)."""
    net(page).comments = copy.deepcopy(comments)
    page.document.network_changed.emit()
    page.flush()


def test_every_comment_is_drawn_as_a_note_at_its_position_and_is_no_layer(digits_page):
    page = digits_page
    before_names, before_params = list(net(page).names()), page.info.total_params
    with_comments(page, [Comment("Feature extractor:\nconv + relu", (400.0, 0.0)), Comment("second", (400.0, 120.0))])
    items = sorted(notes(page), key=lambda i: i.index)
    assert [(i.text, (i.pos().x(), i.pos().y())) for i in items] == [
        ("Feature extractor:\nconv + relu", (400.0, 0.0)), ("second", (400.0, 120.0))]
    assert all(not i.childItems() for i in items)  # no ports
    assert list(net(page).names()) == before_names and page.info.total_params == before_params
    assert len(page.info.order) == len(before_names)  # shapes and statistics know nothing of notes
    items[0].setSelected(True)
    assert page.selected_layers() == [] and page.properties.layer_name is None  # no property form
    assert not [e for e in page.scene.edges() if type(e.source).__name__ == "CommentItem"]
    assert all(i.zValue() < page.scene.node("conv1").zValue() for i in items)  # a layer is drawn above a note
    assert items[0].flags() & QGraphicsItem.ItemIsMovable and items[0].flags() & QGraphicsItem.ItemIsSelectable


def test_a_comment_without_a_position_is_placed_beside_the_layers(digits_page):
    page = digits_page
    with_comments(page, [Comment("a"), Comment("b")])
    layers = page.scene.nodes_rect()
    for item in notes(page):
        box = item.sceneBoundingRect()
        assert box.left() > layers.right() and not any(box.intersects(n.sceneBoundingRect())
                                                       for n in page.scene.nodes().values())
    a, b = sorted(notes(page), key=lambda i: i.index)
    assert not a.sceneBoundingRect().intersects(b.sceneBoundingRect().adjusted(1, 1, -1, -1))


def test_each_network_tab_draws_its_own_comments(digits_page):
    page = digits_page
    with_comments(page, [Comment("main note", (400.0, 0.0))])
    assert page.network_tabs.add_network("Other") == ""
    page.flush()
    assert notes(page) == []
    with_comments(page, [Comment("other note", (0.0, 0.0)), Comment("two", (0.0, 100.0))])
    assert sorted(i.text for i in notes(page)) == ["other note", "two"]
    page.document.show_network("Main")
    page.flush()
    assert [i.text for i in notes(page)] == ["main note"]


def drag(page, item, by: QPoint):
    start = scene_point(page, item.sceneBoundingRect().center())
    viewport = page.view.viewport()
    QTest.mousePress(viewport, Qt.LeftButton, Qt.NoModifier, start)
    for step in range(1, 5):
        QTest.mouseMove(viewport, start + by * step / 4)
    QTest.mouseRelease(viewport, Qt.LeftButton, Qt.NoModifier, start + by)


def test_dragging_a_note_is_one_undo_step_and_undo_redraws_it(digits_page):
    page = digits_page
    with_comments(page, [Comment("drag me", (400.0, 0.0))])
    page.view.zoom_reset()
    stack = page.document.undo_stack
    drag(page, note(page, 0), QPoint(80, 42))
    assert net(page).comments[0].position == (480.0, 40.0)  # snapped like a layer
    assert stack.count() == 1
    stack.undo()
    page.flush()
    assert net(page).comments[0].position == (400.0, 0.0) and note(page, 0).pos() == QPointF(400.0, 0.0)
    stack.redo()
    page.flush()
    assert note(page, 0).pos() == QPointF(480.0, 40.0)


def test_dragging_a_note_with_a_layer_moves_both_in_one_step(digits_page):
    page = digits_page
    with_comments(page, [Comment("with conv1", (400.0, 0.0))])
    page.view.zoom_reset()
    old = net(page).layer("conv1").position
    page.select_layers(["conv1"])
    note(page, 0).setSelected(True)
    drag(page, note(page, 0), QPoint(40, 20))
    assert net(page).comments[0].position == (440.0, 20.0)
    assert net(page).layer("conv1").position == (old[0] + 40, old[1] + 20)
    assert page.document.undo_stack.count() == 1
    page.document.undo_stack.undo()
    assert net(page).comments[0].position == (400.0, 0.0) and net(page).layer("conv1").position == old


def open_editor(page, index):
    item = note(page, index)
    point = scene_point(page, item.sceneBoundingRect().center())
    QTest.mouseDClick(page.view.viewport(), Qt.LeftButton, Qt.NoModifier, point)
    dialog = page.comments.dialog
    assert isinstance(dialog, QDialog) and dialog.isVisible()
    return dialog, dialog.findChild(QPlainTextEdit, "comment_text")


def test_double_click_edits_the_text_enter_keeps_it_as_one_undo_step(digits_page):
    page = digits_page
    with_comments(page, [Comment("old text", (400.0, 0.0))])
    dialog, edit = open_editor(page, 0)
    assert edit.toPlainText() == "old text"
    QTest.keyClicks(edit, "first line")  # the old text is selected: typing replaces it
    QTest.keyClick(edit, Qt.Key_Return, Qt.ShiftModifier)  # a line break in the note
    QTest.keyClicks(edit, "second")
    QTest.keyClick(edit, Qt.Key_Return)
    assert not dialog.isVisible()
    assert net(page).comments[0].text == "first line\nsecond" and note(page, 0).text == "first line\nsecond"
    assert page.document.undo_stack.count() == 1
    page.document.undo_stack.undo()
    page.flush()
    assert net(page).comments[0].text == "old text" and note(page, 0).text == "old text"


def test_escape_cancels_the_text_edit(digits_page):
    page = digits_page
    with_comments(page, [Comment("keep me", (400.0, 0.0))])
    dialog, edit = open_editor(page, 0)
    QTest.keyClicks(edit, "thrown away")
    QTest.keyClick(edit, Qt.Key_Escape)
    assert not dialog.isVisible()
    assert net(page).comments[0].text == "keep me" and page.document.undo_stack.count() == 0


def test_delete_removes_selected_notes_with_selected_layers_in_one_undo_step(digits_page):
    page = digits_page
    with_comments(page, [Comment("a", (400.0, 0.0)), Comment("b", (400.0, 100.0)), Comment("c", (400.0, 200.0))])
    before = page.document.project.copy()
    page.select_layers(["conv2"])
    note(page, 1).setSelected(True)
    page.view.setFocus()
    page.edit_actions["delete"].trigger()
    assert [c.text for c in net(page).comments] == ["a", "c"] and "conv2" not in net(page).names()
    assert sorted(i.text for i in notes(page)) == ["a", "c"]
    assert page.scene.selected_comments() == []  # the note now at index 1 ('c') is not selected
    assert page.document.undo_stack.count() == 1
    page.document.undo_stack.undo()
    page.flush()
    assert page.document.project == before and sorted(i.text for i in notes(page)) == ["a", "b", "c"]
    page.scene.clearSelection()
    note(page, 0).setSelected(True)
    page.delete_selected()  # a note alone
    assert [c.text for c in net(page).comments] == ["b", "c"] and page.document.undo_stack.undoText() == "Delete comment"


def test_context_menu_add_comment_puts_a_note_at_the_click(digits_page):
    page = digits_page
    page.view.zoom_reset()
    empty = page.scene.nodes_rect().topRight() + QPointF(200, 40)
    point = scene_point(page, empty)
    shown = []

    def choose_add_comment(tries=50):
        menu = QApplication.activePopupWidget()
        if menu is None:  # not shown yet
            if tries:
                QTimer.singleShot(20, lambda: choose_add_comment(tries - 1))
            return
        shown.append([action.text() for action in menu.actions()])
        action = next((a for a in menu.actions() if a.text() == "Add Co&mment"), None)
        if action is None:
            menu.close()  # the assertion below says what is missing
            return
        menu.setActiveAction(action)
        QTest.keyClick(menu, Qt.Key_Return)

    QTimer.singleShot(0, choose_add_comment)
    page._context_menu(point)  # what a right click on the empty canvas opens
    assert "Add Co&mment" in shown[0]
    dialog = page.comments.dialog
    assert dialog is not None and dialog.isVisible()
    edit = dialog.findChild(QPlainTextEdit, "comment_text")
    QTest.keyClicks(edit, "a new note")
    QTest.keyClick(edit, Qt.Key_Return)
    (comment,) = net(page).comments
    at = page.view.mapToScene(point)
    assert comment.text == "a new note"
    assert abs(comment.position[0] - at.x()) <= 5 and abs(comment.position[1] - at.y()) <= 5
    assert [i.text for i in notes(page)] == ["a new note"]


def test_a_comment_added_in_the_gui_is_saved_and_exported(digits_page, tmp_path, qtbot):
    from nnconsole.app.document.project_document import ProjectDocument
    from nnconsole.app.edit.page import EditPage
    from nnconsole.engine.interop.files import import_file
    from nnconsole.engine.interop.sdcproj.exporter import export_sdcproj

    page = digits_page
    page._context_pos = QPointF(600, 30)
    page.edit_actions["add_comment"].trigger()
    edit = page.comments.dialog.findChild(QPlainTextEdit, "comment_text")
    QTest.keyClicks(edit, "saved <b>note</b>")
    QTest.keyClick(edit, Qt.Key_Return, Qt.ShiftModifier)
    QTest.keyClicks(edit, "line 2")
    QTest.keyClick(edit, Qt.Key_Return)
    want = Comment("saved <b>note</b>\nline 2", (600.0, 30.0))
    path = str(tmp_path / "saved.yaml")
    page.document.save(path)
    document = ProjectDocument()
    document.load(path)
    reopened = EditPage(document, None)
    qtbot.addWidget(reopened)
    assert document.project.network.comments == [want]
    assert [(i.text, i.pos()) for i in notes(reopened)] == [(want.text, QPointF(600.0, 30.0))]
    out = str(tmp_path / "saved.sdcproj")
    export_sdcproj(page.document.project, out)
    assert import_file(out).project.network.comments == [want]


def test_hostile_texts_and_positions(digits_page, tmp_path):
    page = digits_page
    long_text = ("word " * 1500 + "x" * 2500)[:10_000]
    html = "<h1>big</h1><img src='file:///etc/passwd'><script>alert(1)</script>"
    with_comments(page, [Comment(long_text, (400.0, 0.0)), Comment(html, (400.0, 300.0)),
                         Comment("far", (50_000.0, -40_000.0)), Comment("bad", (float("nan"), 1.0))])
    big, markup, far, bad = sorted(notes(page), key=lambda i: i.index)
    assert big.clipped and big.sceneBoundingRect().height() < 220  # a box, not a wall of text
    assert big.toolTip().count("word") > 300 and "(8,000 more characters)" in big.toolTip()  # capped (issue 25)
    assert markup.text == html and "&lt;h1&gt;" in markup.toolTip() and "<h1>" not in markup.toolTip()
    assert not markup.clipped
    assert page.scene.sceneRect().contains(far.sceneBoundingRect())  # still reachable by scrolling
    page.view.ensureVisible(far)
    assert page.view.mapToScene(page.view.viewport().rect()).boundingRect().intersects(far.sceneBoundingRect())
    x, y = bad.pos().x(), bad.pos().y()
    assert x == x and y == y  # a NaN position is placed beside the layers instead
    for item in (big, markup):
        image = tmp_path / f"{item.index}.png"
        page.view.centerOn(item)
        page.view.grab().save(str(image))
        assert image.stat().st_size > 0
    QApplication.processEvents()


def test_notes_of_another_network_are_saved_and_the_delete_key_removes_a_note(digits_page, tmp_path):
    from nnconsole.engine.project.io import load_project

    page = digits_page
    assert page.network_tabs.add_network("Decoder") == ""
    page._context_pos = QPointF(100, 200)
    page.edit_actions["add_comment"].trigger()
    edit = page.comments.dialog.findChild(QPlainTextEdit, "comment_text")
    QTest.keyClicks(edit, "decoder note")
    QTest.keyClick(edit, Qt.Key_Return)
    page._context_pos = QPointF(100, 400)
    page.edit_actions["add_comment"].trigger()
    QTest.keyClick(page.comments.dialog.findChild(QPlainTextEdit, "comment_text"), Qt.Key_Escape)
    assert [c.text for c in page.document.project.networks["Decoder"].comments] == ["decoder note", ""]
    page.scene.clearSelection()
    note(page, 1).setSelected(True)
    page.view.setFocus()
    QTest.keyClick(page.view, Qt.Key_Delete)  # the key, as a user presses it
    assert [c.text for c in page.document.project.networks["Decoder"].comments] == ["decoder note"]
    assert page.document.project.network.comments == []  # Main keeps its own (none)
    path = str(tmp_path / "two.yaml")
    page.document.save(path)
    saved = load_project(path)
    assert saved.networks["Decoder"].comments == [Comment("decoder note", (100.0, 200.0))]
    assert saved.network.comments == []


def test_cut_takes_the_layers_and_leaves_the_selected_notes(digits_page):
    page = digits_page
    with_comments(page, [Comment("stays", (400.0, 0.0))])
    page.select_layers(["conv2"])
    note(page, 0).setSelected(True)
    page.edit_actions["cut"].trigger()  # the clipboard holds layers only: a note cut would be lost
    assert "conv2" not in net(page).names() and [c.text for c in net(page).comments] == ["stays"]
