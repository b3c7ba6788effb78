"""The EDIT tab: palette | canvas (with totals and issues below) | layer properties and statistics.

The page wires the widgets to one ``NetworkEditor`` and re-runs shape inference whenever the
document changes (coalesced to one refresh per event-loop turn; ``flush`` refreshes at once).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from PySide6.QtCore import QByteArray, QMimeData, QPointF, Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (QApplication, QHBoxLayout, QLabel, QMenu, QSplitter, QTabWidget, QToolBar,
                               QVBoxLayout,
                               QWidget)

from nnconsole.app.edit.find_layer import FindLayerField
from nnconsole.app.edit import layout
from nnconsole.app.edit.canvas import NetworkScene
from nnconsole.app.edit.clipboard import MIME_TYPE
from nnconsole.app.edit.comment_edits import CanvasComments
from nnconsole.app.edit.edge_item import EdgeItem
from nnconsole.app.edit.editor import NetworkEditor
from nnconsole.app.edit.issues import IssuesPanel, collect_issues
from nnconsole.app.edit.layer_help import LayerHelp
from nnconsole.app.edit.minimap import Minimap
from nnconsole.app.edit.network_tabs import NetworkTabs
from nnconsole.app.edit.node_item import NodeItem
from nnconsole.app.edit.palette import TYPE_ROLE, LayerPalette
from nnconsole.app.edit.properties import PropertyPanel
from nnconsole.app.edit.statistics import StatisticsView
from nnconsole.app.edit.view import NetworkView
from nnconsole.app.shell import settings as app_settings
from nnconsole.app.widgets.rich_text import plain_tooltip
from nnconsole.engine.layers import groups
from nnconsole.engine.project.structure import all_networks
from nnconsole.engine.network.shapes import NetworkInfo, infer_network

PROPERTIES_TAB, STATISTICS_TAB, HELP_TAB = 0, 1, 2


class EditPage(QWidget):
    """The network editor page; ``edit_actions`` holds its QActions by short name for the menus."""

    def __init__(self, document: Any, window: Optional[Any] = None, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("edit_page")
        self.document = document
        self.window_ = window
        self.editor = NetworkEditor(document, self)
        self.info: NetworkInfo = NetworkInfo()
        self.last_message = ""
        self._context_pos: Optional[QPointF] = None
        self.edit_actions: Dict[str, QAction] = {}

        self.palette = LayerPalette()
        self.scene = NetworkScene(self)
        self.view = NetworkView(self.scene)
        self.properties = PropertyPanel(self.editor)
        self.statistics = StatisticsView()
        self.help = LayerHelp()  # NNC's reference text and paper link for the selected layer type
        self.issues = IssuesPanel()
        self.network_tabs = NetworkTabs(self.document)  # Main and the project's other networks (issue 17)
        self.totals = QLabel()
        self.totals.setObjectName("totals_label")
        self.totals.setStyleSheet("padding: 3px 6px; background: #eef1f5; border-top: 1px solid #d5d9e0;")
        self.zoom_label = QLabel("100%")
        self.zoom_label.setObjectName("zoom_label")
        self.zoom_label.setMinimumWidth(48)

        self._refresh_timer = QTimer(self)  # coalesces the document's change signals into one refresh
        self._refresh_timer.setSingleShot(True)
        self._refresh_timer.setInterval(0)
        self._refresh_timer.timeout.connect(self.refresh)
        self._issues_timer = QTimer(self)  # settings reach only the issues list (check_settings)
        self._issues_timer.setSingleShot(True)
        self._issues_timer.setInterval(0)
        self._issues_timer.timeout.connect(self.refresh_issues)
        self._make_actions()
        self._build_layout()
        self.minimap = Minimap(self.view)  # the whole network in the canvas's corner, when it does not fit
        self.comments = CanvasComments(self)  # the canvas notes (NNC's Comment): add, edit, move, delete
        self._connect()
        self.refresh()

    # ---- construction ------------------------------------------------------------------------------
    def _action(self, key: str, text: str, slot: Any, shortcut: Any = None, tip: str = "") -> QAction:
        action = QAction(text, self)
        action.setObjectName(f"action_{key}")
        if shortcut is not None:
            shortcuts = shortcut if isinstance(shortcut, list) else [shortcut]
            action.setShortcuts([QKeySequence(s) for s in shortcuts])
        if tip:
            action.setToolTip(tip)
            action.setStatusTip(tip)
        action.triggered.connect(lambda _checked=False: slot())
        self.edit_actions[key] = action
        self.addAction(action)
        return action

    def _make_actions(self) -> None:
        self.find_field = FindLayerField(self)
        a = self._action
        a("delete", "&Delete", self.delete_selected, [QKeySequence.Delete, "Backspace"],
          "Delete the selected layers, connections and comments")
        a("cut", "Cu&t", self.cut_selected, QKeySequence.Cut, "Cut the selected layers")
        a("copy", "&Copy", self.copy_selected, QKeySequence.Copy, "Copy the selected layers")
        a("paste", "&Paste", self.paste, QKeySequence.Paste, "Paste layers")
        a("select_all", "Select &All", self.select_all, QKeySequence.SelectAll, "Select every layer")
        a("rename", "&Rename Layer", self.focus_rename, "F2", "Rename the selected layer")
        a("find_layer", "Find Layer &Type", self.focus_palette_search, "Ctrl+K", "Search the layer palette")
        a("find_on_canvas", "&Find Layer…", lambda: self.find_field.start(), QKeySequence.Find,
          "Select a layer of the network by name and centre the canvas on it")
        a("auto_layout", "Auto &Layout", self.auto_layout, "Ctrl+L", "Arrange the network top to bottom")
        a("add_comment", "Add Co&mment", self._add_comment_from_menu, tip="A note on the canvas (NNC's Comment)")
        a("zoom_in", "Zoom &In", self.view.zoom_in, [QKeySequence.ZoomIn, "Ctrl+="], "Zoom in (Ctrl+wheel)")
        a("zoom_out", "Zoom &Out", self.view.zoom_out, QKeySequence.ZoomOut, "Zoom out (Ctrl+wheel)")
        a("zoom_reset", "&Actual Size", self.view.zoom_reset, "Ctrl+0", "Zoom to 100%")
        a("fit", "&Fit Network", self.view.fit, "Ctrl+Shift+F", "Show the whole network")
        a("show_statistics", "Network &Statistics", self.show_statistics, "Ctrl+Shift+I",
          "Per-layer output size, parameters and multiply-adds")
        minimap = a("minimap", "&Overview Map", lambda: self.minimap.set_enabled_by_user(minimap.isChecked()),
                    tip="The whole network in the canvas's corner while it does not fit; click to move there")
        minimap.setCheckable(True)
        minimap.setChecked(True)
        for key in ("delete", "cut", "copy", "paste", "select_all"):
            # only while the canvas has focus: Delete in the palette or Ctrl+C in a list must not edit
            action = self.edit_actions[key]
            action.setShortcutContext(Qt.WidgetWithChildrenShortcut)
            self.removeAction(action)
            self.view.addAction(action)
        self.add_menu = QMenu("Add &Layer", self)
        self.add_menu.setObjectName("menu_add_layer")
        for group, specs in groups().items():
            sub = self.add_menu.addMenu(group)
            for spec in specs:
                action = QAction(spec.type, self)
                action.setObjectName(f"action_add_{spec.type}")
                action.setStatusTip(spec.doc)
                action.triggered.connect(lambda _c=False, t=spec.type: self._add_from_menu(t))
                sub.addAction(action)
                self.edit_actions[f"add_{spec.type}"] = action

    def _build_layout(self) -> None:
        stack = self.document.undo_stack
        undo, redo = QAction("Undo", self), QAction("Redo", self)  # fixed texts keep the toolbar still
        undo.setObjectName("edit_undo")
        redo.setObjectName("edit_redo")
        undo.triggered.connect(stack.undo)
        redo.triggered.connect(stack.redo)
        self._undo_buttons = (undo, redo)
        for signal in (stack.canUndoChanged, stack.canRedoChanged, stack.undoTextChanged, stack.redoTextChanged):
            signal.connect(self._update_undo_buttons)
        self._update_undo_buttons()
        toolbar = QToolBar("Edit")
        toolbar.setObjectName("edit_toolbar")
        toolbar.setToolButtonStyle(Qt.ToolButtonTextOnly)
        for item in (undo, redo, None, self.edit_actions["delete"], self.edit_actions["auto_layout"], None,
                     self.edit_actions["zoom_out"], self.edit_actions["zoom_in"], self.edit_actions["zoom_reset"],
                     self.edit_actions["fit"]):
            toolbar.addSeparator() if item is None else toolbar.addAction(item)
        toolbar.addWidget(self.zoom_label)
        center = QWidget()
        center_box = QVBoxLayout(center)
        center_box.setContentsMargins(0, 0, 0, 0)
        center_box.setSpacing(0)
        center_box.addWidget(toolbar)
        center_box.addWidget(self.view, 1)
        footer = QHBoxLayout()  # the networks as sheet tabs beside the totals: no height taken from the canvas
        footer.setSpacing(0)
        footer.addWidget(self.network_tabs)
        self.network_tabs.setFixedHeight(self.totals.sizeHint().height())  # the canvas keeps its height
        footer.addWidget(self.totals, 1)
        footer.addWidget(self.find_field)  # the toolbar is full at 1366 px; the footer has room
        # On a narrow canvas the totals line is cut, not the find field (size hints, and so the splitter's
        # first sizes, stay as they were)
        self.totals.setMinimumWidth(60)
        self.find_field.setMinimumWidth(120)
        self.find_field.setFixedHeight(self.totals.sizeHint().height())  # the footer, and so the canvas, keep their height
        center_box.addLayout(footer)
        self.v_split = QSplitter(Qt.Vertical)
        self.v_split.setObjectName("edit_vertical_splitter")
        self.v_split.addWidget(center)
        self.v_split.addWidget(self.issues)
        self.v_split.setStretchFactor(0, 1)
        self.v_split.setSizes([720, 110])
        self.side_tabs = QTabWidget()
        self.side_tabs.setObjectName("edit_side_tabs")
        self.side_tabs.addTab(self.properties, "Layer Property")
        self.side_tabs.addTab(self.statistics, "Statistics")
        self.side_tabs.addTab(self.help, "Layer Help")
        self.h_split = QSplitter(Qt.Horizontal)
        self.h_split.setObjectName("edit_horizontal_splitter")
        self.h_split.addWidget(self.palette)
        self.h_split.addWidget(self.v_split)
        self.h_split.addWidget(self.side_tabs)
        self.h_split.setStretchFactor(1, 1)
        self.h_split.setSizes([205, 735, 460])
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        box.addWidget(self.h_split)
        self.view.setContextMenuPolicy(Qt.CustomContextMenu)

    def _connect(self) -> None:
        doc = self.document
        doc.network_changed.connect(self._schedule)
        doc.layer_changed.connect(self._schedule)
        doc.settings_changed.connect(self._schedule_issues)
        doc.reloaded.connect(self._reloaded)
        self.palette.layer_activated.connect(self.add_layer)
        self.palette.tree.currentItemChanged.connect(
            lambda item, _old: self.help.show_type(item.data(0, TYPE_ROLE) if item is not None else None))
        self.view.layer_dropped.connect(self.drop_layer)
        self.view.zoom_changed.connect(lambda z: self.zoom_label.setText(f"{z * 100:.0f}%"))
        self.view.customContextMenuRequested.connect(self._context_menu)
        self.scene.connection_requested.connect(self._connection_requested)
        self.scene.items_moved.connect(self._items_moved)
        self.scene.selectionChanged.connect(self._selection_changed)
        self.scene.node_activated.connect(lambda _n: self.side_tabs.setCurrentIndex(PROPERTIES_TAB))
        self.scene.node_activated.connect(self.open_unit)
        self.properties.edited.connect(self._panel_edited)
        self.issues.layer_activated.connect(self.reveal_layer)
        self.statistics.layer_activated.connect(self.reveal_layer)
        self.editor.message_posted.connect(self.show_message)
        self.network_tabs.message.connect(self.show_message)

    def _update_undo_buttons(self, *_args: Any) -> None:
        stack = self.document.undo_stack
        undo, redo = self._undo_buttons
        try:
            can_undo, can_redo = stack.canUndo(), stack.canRedo()
            undo_text, redo_text = stack.undoText(), stack.redoText()
        except RuntimeError:  # the stack is being destroyed with its window
            return
        undo.setEnabled(can_undo)
        redo.setEnabled(can_redo)
        undo.setToolTip(plain_tooltip(f"Undo {undo_text}") if can_undo else "Nothing to undo")  # names layers
        redo.setToolTip(plain_tooltip(f"Redo {redo_text}") if can_redo else "Nothing to redo")

    # ---- refresh -----------------------------------------------------------------------------------
    def _schedule(self, *_args: Any) -> None:
        self._refresh_timer.start()

    def _schedule_issues(self, *_args: Any) -> None:
        self._issues_timer.start()

    def flush(self) -> None:
        """Bring every view up to date with the document now."""
        self._refresh_timer.stop()
        self.refresh()

    def open_unit(self, name: str) -> bool:
        """A double-clicked Unit opens the network it runs in its tab (NNC opens a unit the same way)."""
        layer = next((x for x in self.document.network.layers if x.name == name), None)
        target = str((layer.params or {}).get("network", "")) if layer is not None and layer.type == "Unit" else ""
        if not target or target not in all_networks(self.document.project):
            return False
        self.document.show_network(target)
        return True

    def refresh(self) -> None:
        network = self.document.network  # Main or the network chosen in the tabs under the canvas
        # Unit layers run other networks of the project: their shapes come from those networks' layers
        self.info = infer_network(network, all_networks(self.document.project), self.document.active_network)
        self.scene.sync(network, self.info)
        self.statistics.set_info(self.info)
        self.refresh_issues()
        n_err = len(self.info.errors)
        text = (f"{len(self.info.order)} layers  ·  {self.info.total_params:,} parameters  ·  "
                f"{self.info.total_macs:,} multiply-adds per sample")
        if n_err:
            text += f"  ·  <span style='color:#c62828'><b>{n_err} error{'s' if n_err != 1 else ''}</b></span>"
        self.totals.setText(text)
        self._selection_changed()

    def refresh_issues(self) -> None:
        """The issues list alone: the network's (from the last refresh) and the settings' problems."""
        self._issues_timer.stop()
        self.issues.set_issues(collect_issues(self.document.project, self.info))

    def _reloaded(self) -> None:
        self.scene.select_names([])
        self.flush()
        self.view.show_top()

    # ---- selection ---------------------------------------------------------------------------------
    def selected_layers(self) -> List[str]:
        order = {name: i for i, name in enumerate(self.document.network.names())}
        return sorted(self.scene.selected_names(), key=lambda n: order.get(n, 0))

    def select_layers(self, names: List[str]) -> None:
        self.scene.select_names(names)

    def reveal_layer(self, name: str) -> None:
        node = self.scene.node(name)
        if node is None:
            return
        self.scene.select_names([name])
        self.view.ensureVisible(node.sceneBoundingRect(), 40, 40)

    def _selection_changed(self) -> None:
        names = self.selected_layers()
        if len(names) == 1:
            self.properties.show_layer(names[0], self.info)
        else:
            hint = (f"{len(names)} layers selected. Select one to edit its properties." if names else "")
            self.properties.show_layer(None, hint=hint)
        self.statistics.set_selected(names[0] if len(names) == 1 else None)
        if len(names) == 1:
            self.help.show_type(self.document.network.layer(names[0]).type)

    # ---- edits ---------------------------------------------------------------------------------------
    def add_layer(self, type_name: str, position: Optional[tuple] = None) -> str:
        """Add a layer as the palette does: after the one selected layer, else at ``position``/below."""
        selected = self.selected_layers()
        after = selected[0] if len(selected) == 1 and position is None else None
        name = self.editor.add_layer(type_name, position=position, after=after)
        self.flush()
        self.reveal_layer(name)
        self.view.setFocus()  # so Delete, Ctrl+C ... act on the new layer
        return name

    def drop_layer(self, type_name: str, scene_pos: Any) -> str:
        """A palette layer dropped on the canvas: into the link under the pointer (as NNC does), else there."""
        under = self.scene.items(scene_pos)
        edge = next((i for i in under if isinstance(i, EdgeItem)), None)
        if edge is not None and not any(isinstance(i, NodeItem) for i in under):
            corner = (scene_pos.x() - layout.NODE_WIDTH / 2, scene_pos.y() - layout.NODE_HEIGHT / 2)
            name = self.editor.insert_into_link(type_name, edge.target.name, edge.index, corner)
            if name:
                self.flush()
                self.reveal_layer(name)
                return name
        return self.add_layer(type_name, (scene_pos.x(), scene_pos.y()))

    def _add_from_menu(self, type_name: str) -> None:
        position = None
        if self._context_pos is not None and not self.selected_layers():
            position = (self._context_pos.x(), self._context_pos.y())
        self._context_pos = None
        self.add_layer(type_name, position)

    def _add_comment_from_menu(self) -> None:
        where = self._context_pos or self.view.mapToScene(self.view.viewport().rect().center())
        self._context_pos = None
        self.comments.add_at((where.x(), where.y()))

    def delete_selected(self) -> None:
        self.comments.delete_with(lambda: self.editor.remove(self.scene.selected_names(), self.scene.selected_edges()))
        self.flush()

    def copy_selected(self) -> bool:
        names = self.selected_layers()
        if not names:
            return False
        text = self.editor.copy_text(names)
        mime = QMimeData()
        mime.setData(MIME_TYPE, QByteArray(text.encode("utf-8")))
        mime.setText(text)
        QApplication.clipboard().setMimeData(mime)
        self.show_message(f"copied {len(names)} layer{'s' if len(names) != 1 else ''}")
        return True

    def cut_selected(self) -> None:
        if self.copy_selected():
            self.comments.keep_on_cut()  # notes are not copied: a cut must not delete them
            self.delete_selected()

    def paste(self) -> List[str]:
        mime = QApplication.clipboard().mimeData()
        if mime is None:
            return []
        text = bytes(mime.data(MIME_TYPE)).decode("utf-8") if mime.hasFormat(MIME_TYPE) else mime.text()
        if not text:
            return []
        names = self.editor.paste_text(text)
        self.flush()
        if names:
            self.scene.select_names(names)
        return names

    def select_all(self) -> None:
        self.scene.select_names(list(self.scene.nodes()))

    def auto_layout(self) -> None:
        self.editor.auto_layout()
        self.flush()

    def focus_rename(self) -> None:
        if self.properties.layer_name is None:
            return
        self.side_tabs.setCurrentIndex(PROPERTIES_TAB)
        edit = self.properties.field("name").edit
        edit.setFocus()
        edit.selectAll()

    def focus_palette_search(self) -> None:
        self.palette.search.setFocus()
        self.palette.search.selectAll()

    def show_statistics(self) -> None:
        self.side_tabs.setCurrentIndex(STATISTICS_TAB)

    def _connection_requested(self, source: str, target: str, pin: int) -> None:
        self.editor.connect_layers(source, target, None if pin < 0 else pin)
        self.flush()

    def _items_moved(self, moves: Dict[str, tuple], notes: Dict[int, tuple]) -> None:
        self.comments.moved(moves, notes, self.editor.move)
        self.flush()

    def _panel_edited(self) -> None:
        name = self.properties.layer_name  # after a rename: the new name, whose node is new
        self.flush()
        if name and self.selected_layers() != [name]:
            self.scene.select_names([name])

    def _context_menu(self, pos: Any) -> None:
        self._context_pos = self.view.mapToScene(pos)
        menu = QMenu(self)
        menu.addMenu(self.add_menu)
        menu.addAction(self.edit_actions["add_comment"])
        menu.addSeparator()
        for key in ("cut", "copy", "paste", "delete", "rename", None, "auto_layout", "fit"):
            menu.addSeparator() if key is None else menu.addAction(self.edit_actions[key])
        menu.exec(self.view.viewport().mapToGlobal(pos))
        menu.deleteLater()

    def show_message(self, text: str) -> None:
        self.last_message = text
        window = self.window_
        if window is not None and hasattr(window, "statusBar"):
            window.statusBar().showMessage(text, 8000)

    # ---- window integration ------------------------------------------------------------------------
    def set_active(self, active: bool) -> None:
        """Enable the page's shortcuts only while the EDIT tab is shown."""
        for action in self.edit_actions.values():
            action.setEnabled(active)

    def save_layout(self, settings: Any) -> None:
        settings.set(app_settings.EDIT_SPLITTERS, [self.h_split.saveState(), self.v_split.saveState()])
        settings.set(app_settings.RIGHT_PANEL_TAB, self.side_tabs.currentIndex())

    def restore_layout(self, settings: Any) -> None:
        states = settings.get(app_settings.EDIT_SPLITTERS)
        if len(states) == 2:
            self.h_split.restoreState(QByteArray(states[0]))
            self.v_split.restoreState(QByteArray(states[1]))
        self.side_tabs.setCurrentIndex(settings.get(app_settings.RIGHT_PANEL_TAB))


def create_page(document: Any, window: Any) -> EditPage:
    """The EDIT tab for ``document`` inside main window ``window``."""
    return EditPage(document, window)
