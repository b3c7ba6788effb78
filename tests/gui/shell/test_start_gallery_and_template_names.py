"""Template names are never cut (issue 28 item 14), and the start page is a gallery of network thumbnails
of the templates and recent projects, drawn offscreen and cached outside project folders (item 15)."""
from __future__ import annotations

import os

import pytest
from PySide6.QtCore import QRect, Qt

from nnconsole.app.shell import thumbnails
from nnconsole.app.shell.templates_dialog import TemplateChooserDialog
from nnconsole.templates import list_templates, template_path

pytestmark = pytest.mark.gui
SHOTS = "/work/shots/shell"


def whole_text_fits(view, item, text_height_limit=None):
    """The item's text, wrapped to its cell, fits in the cell, and the cell inside the visible width."""
    rect = view.visualItemRect(item)
    needed = view.fontMetrics().boundingRect(QRect(0, 0, rect.width() - 6, 10_000), Qt.TextWordWrap, item.text())
    room = text_height_limit if text_height_limit is not None else rect.height()
    return rect.left() >= 0 and rect.right() <= view.viewport().width() and needed.width() <= rect.width() \
        and needed.height() <= room, (item.text(), rect, needed, view.viewport().width())


def test_the_template_list_shows_whole_names(qtbot):
    dialog = TemplateChooserDialog(None)
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    for row in range(dialog.list.count()):
        fits, why = whole_text_fits(dialog.list, dialog.list.item(row))
        assert fits, why
    dialog.grab().save(f"{SHOTS}/templates_dialog_after_test.png")


def test_the_start_page_is_a_gallery_with_cached_thumbnails(make_window, qtbot, template_project):
    window = make_window()
    window.settings.add_recent_project(template_project)
    window.resize(1366, 740)
    window.show()
    window.show_start_page()
    qtbot.waitExposed(window)
    page = window.start_page
    gallery = page.templates
    assert gallery.count() == len(list_templates())
    icon_height = thumbnails.SIZE.height()
    for row in range(gallery.count()):
        item = gallery.item(row)
        assert not item.icon().isNull()
        fits, why = whole_text_fits(gallery, item, gallery.visualItemRect(item).height() - icon_height)
        assert fits, why
    for t in list_templates():
        cached = thumbnails.cache_file(str(template_path(t.name) / "project.yaml"))
        assert os.path.isfile(cached) and cached.startswith(thumbnails.cache_folder())
        assert not cached.startswith(str(template_path(t.name)))
    assert sorted(os.listdir(os.path.dirname(template_project))) == ["project.yaml"]  # nothing in the project
    recent = page.projects.item(0)
    assert recent.data(Qt.UserRole) == os.path.abspath(template_project) and not recent.icon().isNull()
    window.grab().save(f"{SHOTS}/start_page_gallery_after.png")


def test_a_thumbnail_draws_every_layer():
    from nnconsole.engine.project.io import load_project

    project = load_project(str(template_path("digits_cnn") / "project.yaml"))
    image = thumbnails.render_network(project.network)
    background = image.pixelColor(0, 0)
    drawn = sum(1 for y in range(image.height()) for x in range(image.width()) if image.pixelColor(x, y) != background)
    assert drawn > 200  # boxes and lines, not an empty card
