"""The main window: NNC's five tabs, the menus, the title with the unsaved mark, and the
remembered layout. File operations live in ``project_files``; each tab is a page module.

A tab page is ``nnconsole.app.<tab>.page.create_page(document, window) -> QWidget``; when a tab's
module is not there yet, a placeholder says what the tab will hold.
"""
from __future__ import annotations

import importlib
import logging
import os
from typing import Any, Dict, Optional, Sequence, Tuple

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QActionGroup, QCloseEvent, QKeySequence
from PySide6.QtWidgets import QLabel, QMainWindow, QStackedWidget, QTabWidget, QVBoxLayout, QWidget

from nnconsole.app.shell import dialogs, help_pages
from nnconsole.app.shell import settings as app_settings
from nnconsole.app.shell import window_geometry
from nnconsole.app.widgets import theme
from nnconsole.app.document.autosave import Autosaver
from nnconsole.app.document.project_document import ProjectDocument
from nnconsole.app.document.project_files import ProjectFiles
from nnconsole.app.shell.start_page import StartPage, new_empty_project

log = logging.getLogger(__name__)

# (key, title, what the tab holds): the key names the package nnconsole.app.<key>.page
TABS: Tuple[Tuple[str, str, str], ...] = (
    ("edit", "EDIT", "the network editor"),
    ("dataset", "DATASET", "the training and validation datasets: CSV files, variables and a preview of samples"),
    ("config", "CONFIG", "global settings, the optimizer and its learning-rate schedule, and the multi-GPU plan"),
    ("training", "TRAINING", "training runs on this machine, N CPU processes or N GPUs, with live learning curves"),
    ("evaluation", "EVALUATION", "results of finished runs: accuracy, confusion matrix and per-sample outputs"),
)


def placeholder_page(key: str, title: str, what: str, error: str = "") -> QWidget:
    """A real, empty page saying what the tab will hold (and why it is empty)."""
    page = QWidget()
    page.setObjectName(f"placeholder_{key}")
    label = QLabel(f"<h2>{title}</h2><p>This tab will show {what}.</p>"
                   + (f"<p style='color:#a86400'>It could not be loaded: {error}</p>" if error else
                      "<p style='color:#56606b'>It is not part of this build yet; projects edited here "
                      "still train with <code>nnconsole train PROJECT</code>.</p>"))
    label.setObjectName(f"placeholder_label_{key}")
    label.setWordWrap(True)
    label.setAlignment(Qt.AlignCenter)
    label.setTextFormat(Qt.RichText)
    box = QVBoxLayout(page)
    box.addWidget(label)
    return page


class MainWindow(QMainWindow):
    """One window, one ProjectDocument shared by every tab."""

    def __init__(self, document: Optional[ProjectDocument] = None, settings: Optional[app_settings.Settings] = None,
                 tab_keys: Sequence[str] = tuple(t[0] for t in TABS)) -> None:
        super().__init__()
        self.setObjectName("main_window")
        self.document = document or ProjectDocument(parent=self)
        self.settings = settings or app_settings.Settings()
        theme.apply_theme(self.theme_name())  # before the pages: they read their colours when they are built
        self.autosaver = Autosaver(self.document, self.settings.get(app_settings.AUTOSAVE_INTERVAL), self)
        self.files = ProjectFiles(self, self.document, self.settings, self.autosaver)
        self.actions_by_name: Dict[str, QAction] = {}
        self.pages: Dict[str, QWidget] = {}
        self.tabs = QTabWidget()
        self.tabs.setObjectName("main_tabs")
        self.tabs.setDocumentMode(True)
        for key, title, what in TABS:
            page = self._create_page(key, title, what) if key in tab_keys else placeholder_page(key, title, what)
            self.pages[key] = page
            self.tabs.addTab(page, title)
        self.edit_page = self.pages["edit"]
        self.start_page = StartPage(self)  # shown by start() when no project opens, and View > Start Page
        self.stack = QStackedWidget()
        self.stack.addWidget(self.tabs)
        self.stack.addWidget(self.start_page)
        self.setCentralWidget(self.stack)
        self.statusBar().setObjectName("status_bar")
        self._make_menus()
        self.tabs.currentChanged.connect(self._tab_changed)
        self.document.modified_changed.connect(self.update_title)
        self.document.path_changed.connect(self.update_title)
        self.document.reloaded.connect(self.update_title)
        self.document.reloaded.connect(self.show_tabs)  # a project opened, created or recovered
        self.files.message_posted.connect(lambda text: self.statusBar().showMessage(text, 8000))
        self.autosaver.saved.connect(lambda path: self.statusBar().showMessage(f"autosaved to {path}", 4000))
        self.autosaver.failed.connect(lambda text: self.statusBar().showMessage(text, 8000))
        self.setAcceptDrops(True)  # images dropped anywhere go to EVALUATION's Inference view
        self.restore_layout()
        self._tab_changed(self.tabs.currentIndex())
        self.update_title()

    # ---- tabs ----------------------------------------------------------------------------------
    def _create_page(self, key: str, title: str, what: str) -> QWidget:
        try:
            module = importlib.import_module(f"nnconsole.app.{key}.page")
        except ImportError as exc:
            log.info("tab %s not available: %s", title, exc)
            return placeholder_page(key, title, what)
        try:
            page = module.create_page(self.document, self)
        except Exception as exc:  # a broken tab must not keep the editor from opening
            log.exception("tab %s failed to start", title)
            return placeholder_page(key, title, what, error=f"{type(exc).__name__}: {exc}")
        page.setObjectName(page.objectName() or f"{key}_page")
        return page

    def _tab_changed(self, index: int) -> None:
        if hasattr(self.edit_page, "set_active"):
            self.edit_page.set_active(self.tabs.widget(index) is self.edit_page)

    def show_tab(self, key: str) -> None:
        self.show_tabs()
        self.tabs.setCurrentWidget(self.pages[key])

    def show_tabs(self) -> None:
        self.stack.setCurrentWidget(self.tabs)

    def show_start_page(self) -> None:
        self.start_page.refresh()
        self.stack.setCurrentWidget(self.start_page)

    def dragEnterEvent(self, event: Any) -> None:  # noqa: N802 - Qt override: widgets that take drops come first
        page = self.pages.get("evaluation")
        paths = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        if hasattr(page, "dropped_data") and page.dropped_data(paths):
            event.acceptProposedAction()

    def dropEvent(self, event: Any) -> None:  # noqa: N802 - Qt override
        paths = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        page = self.pages.get("evaluation")
        if hasattr(page, "infer_dropped") and page.infer_dropped(paths):
            self.show_tab("evaluation")
            event.acceptProposedAction()

    # ---- menus -----------------------------------------------------------------------------------
    def _action(self, key: str, text: str, slot: Any, shortcut: Any = None) -> QAction:
        action = QAction(text, self)
        action.setObjectName(f"action_{key}")
        if shortcut is not None:
            action.setShortcuts([QKeySequence(s) for s in (shortcut if isinstance(shortcut, list) else [shortcut])])
        action.triggered.connect(lambda _checked=False: slot())
        self.actions_by_name[key] = action
        return action

    def _make_menus(self) -> None:
        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        file_menu.setObjectName("menu_file")
        file_menu.addAction(self._action("new", "&New Project from Template…", self.files.new_from_template,
                                         QKeySequence.New))
        file_menu.addAction(self._action("new_empty", "New &Empty Project", lambda: new_empty_project(self)))
        file_menu.addAction(self._action("open", "&Open…", self.files.open, QKeySequence.Open))
        self.recent_menu = file_menu.addMenu("Open &Recent")
        self.recent_menu.setObjectName("menu_recent")
        self.recent_menu.aboutToShow.connect(self.rebuild_recent_menu)
        file_menu.addSeparator()
        file_menu.addAction(self._action("save", "&Save", self.files.save, QKeySequence.Save))
        file_menu.addAction(self._action("save_as", "Save &As…", self.files.save_as, "Ctrl+Shift+S"))
        file_menu.addSeparator()
        file_menu.addAction(self._action("quit", "&Quit", self.close, QKeySequence.Quit))

        edit_menu = bar.addMenu("&Edit")
        edit_menu.setObjectName("menu_edit")
        undo = self.document.undo_stack.createUndoAction(self, "&Undo")
        undo.setObjectName("action_undo")
        undo.setShortcuts(QKeySequence.Undo)
        redo = self.document.undo_stack.createRedoAction(self, "&Redo")
        redo.setObjectName("action_redo")
        redo.setShortcuts([QKeySequence("Ctrl+Shift+Z"), QKeySequence("Ctrl+Y")])
        self.actions_by_name.update(undo=undo, redo=redo)
        edit_menu.addActions([undo, redo])
        page_actions = getattr(self.edit_page, "edit_actions", {})
        view_menu = bar.addMenu("&View")
        view_menu.setObjectName("menu_view")
        if page_actions:
            edit_menu.addSeparator()
            for key in ("cut", "copy", "paste", "delete", "select_all", None, "rename", "find_on_canvas", "find_layer"):
                edit_menu.addSeparator() if key is None else edit_menu.addAction(page_actions[key])
            edit_menu.addMenu(self.edit_page.add_menu)
            for key in ("zoom_in", "zoom_out", "zoom_reset", "fit", "minimap", None, "auto_layout",
                        "show_statistics"):
                view_menu.addSeparator() if key is None else view_menu.addAction(page_actions[key])
            view_menu.addSeparator()
        view_menu.addAction(self._action("start_page", "&Start Page", self.show_start_page))
        self._make_theme_menu(view_menu.addMenu("&Theme"))
        for i, (key, title, _) in enumerate(TABS):
            view_menu.addAction(self._action(f"tab_{key}", f"{title} Tab", lambda k=key: self.show_tab(k),
                                             f"Ctrl+{i + 1}"))
        help_menu = bar.addMenu("&Help")
        help_menu.setObjectName("menu_help")
        for key, text, shortcut in (("getting-started", "&Getting Started", QKeySequence.HelpContents),
                                    ("layers", "&Layer Reference", None), ("shortcuts", "&Keyboard Shortcuts", None),
                                    ("errors", "What Does an &Error Mean?", None)):
            help_menu.addAction(self._action(f"help_{key.replace('-', '_')}", text,
                                             lambda k=key: self.open_help(k), shortcut))
        help_menu.addSeparator()
        help_menu.addAction(self._action("about", "&About nnconsole", lambda: dialogs.show_about(self)))

    def open_help(self, page: str) -> Any:
        """Show a Help page (the shortcuts page lists this window's actions)."""
        actions = {**getattr(self.edit_page, "edit_actions", {}), **self.actions_by_name}
        return help_pages.open_help(page, self, actions)

    def _make_theme_menu(self, menu: Any) -> None:
        """View > Theme: Light, Dark or System (the platform's palette), remembered in the settings."""
        menu.setObjectName("menu_theme")
        group = QActionGroup(self)
        current = self.theme_name()
        for name, text in (("system", "&System"), ("light", "&Light"), ("dark", "&Dark")):
            action = self._action(f"theme_{name}", text, lambda n=name: self.set_theme(n))
            action.setCheckable(True)
            action.setChecked(name == current)
            group.addAction(action)
            menu.addAction(action)

    def theme_name(self) -> str:
        name = self.settings.get(app_settings.THEME)
        return name if name in theme.THEMES else "system"

    def set_theme(self, name: str) -> None:
        """Switch the app's colours to ``name`` and remember it."""
        self.settings.set(app_settings.THEME, name)
        self.actions_by_name[f"theme_{name}"].setChecked(True)
        theme.apply_theme(name)

    def rebuild_recent_menu(self) -> None:
        """List recent projects that still exist (vanished ones are dropped from the setting)."""
        self.recent_menu.clear()
        paths = self.settings.recent_projects()
        for i, path in enumerate(paths):
            label = os.path.basename(os.path.dirname(path)) + "/" + os.path.basename(path)
            action = self.recent_menu.addAction(f"&{i + 1} {label}" if i < 9 else label)
            action.setObjectName(f"action_recent_{i}")
            action.setToolTip(path)
            action.setStatusTip(path)
            action.triggered.connect(lambda _c=False, p=path: self.files.open_path(p))
        if not paths:
            empty = self.recent_menu.addAction("No recent projects")
            empty.setEnabled(False)
        self.recent_menu.addSeparator()
        clear = self.recent_menu.addAction("Clear List")
        clear.setObjectName("action_clear_recent")
        clear.triggered.connect(self.settings.clear_recent_projects)

    # ---- title, layout, closing -------------------------------------------------------------------
    def update_title(self, *_args: Any) -> None:
        mark = "*" if self.document.modified else ""
        self.setWindowTitle(f"{self.document.display_name()}{mark} — nnconsole")

    def start(self, project: Optional[str] = None) -> None:
        """What the app does once the window is shown: open ``project``, or recover an untitled crash,
        or reopen the last project (an option), or show the start page."""
        if project:
            self.files.open_path(project, ask_save=False)
            return
        if self.files.recover_untitled():
            return
        recent = self.settings.recent_projects()
        if recent and self.settings.get(app_settings.REOPEN_LAST_PROJECT) \
                and self.files.open_path(recent[0], ask_save=False):
            return
        self.show_start_page()

    def restore_layout(self) -> None:
        s = self.settings
        window_geometry.restore(self, s)
        state = s.get(app_settings.WINDOW_STATE)
        if not state.isEmpty():
            self.restoreState(state)
        index = s.get(app_settings.CURRENT_TAB)
        if 0 <= index < self.tabs.count():
            self.tabs.setCurrentIndex(index)
        if hasattr(self.edit_page, "restore_layout"):
            self.edit_page.restore_layout(s)

    def save_layout(self) -> None:
        s = self.settings
        window_geometry.save(self, s)
        s.set(app_settings.WINDOW_STATE, self.saveState())
        s.set(app_settings.CURRENT_TAB, self.tabs.currentIndex())
        if hasattr(self.edit_page, "save_layout"):
            self.edit_page.save_layout(s)
        s.sync()

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt override
        # Pages with work going ask first (TRAINING: stop the runs, leave them running, or cancel).
        if not all(page.confirm_close() for page in self.pages.values() if hasattr(page, "confirm_close")):
            event.ignore()
            return
        if not self.files.maybe_save():
            event.ignore()
            return
        self.save_layout()
        self.autosaver.stop()
        self.autosaver.discard()
        for page in self.pages.values():
            if hasattr(page, "shutdown"):
                page.shutdown()
        event.accept()
