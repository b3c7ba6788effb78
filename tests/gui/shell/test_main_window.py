"""The main window: tabs (real pages or placeholders), title, new/open/save/save-as, recent
projects, the unsaved-changes prompt and the remembered layout."""
from __future__ import annotations

import importlib.util
import os
import sys
import types

import pytest
from PySide6.QtWidgets import QLabel, QWidget

from nnconsole.app.shell import dialogs
from nnconsole.app.shell import settings as app_settings
from nnconsole.app.shell.main_window import TABS
from nnconsole.app.shell.templates_dialog import TemplateChooserDialog
from nnconsole.engine.project.io import load_project
from nnconsole.engine.check.project_file import load_valid_project
from tests.gui.support import TEST_DATA

pytestmark = pytest.mark.gui


def test_tabs_are_nnc_tabs_with_placeholders(window):
    assert [window.tabs.tabText(i) for i in range(window.tabs.count())] == [
        "EDIT", "DATASET", "CONFIG", "TRAINING", "EVALUATION"]
    assert window.tabs.widget(0) is window.edit_page
    for key in ("dataset", "config", "training", "evaluation"):
        label = window.findChild(QLabel, f"placeholder_label_{key}")
        assert label is not None and "This tab will show" in label.text()


def test_tab_pages_come_from_create_page(make_window, monkeypatch):
    calls = []
    fake = types.ModuleType("nnconsole.app.dataset.page")
    fake.create_page = lambda document, window: calls.append((document, window)) or QLabel("fake dataset page")
    broken = types.ModuleType("nnconsole.app.config.page")
    broken.create_page = lambda document, window: 1 / 0
    monkeypatch.setitem(sys.modules, "nnconsole.app.dataset.page", fake)
    monkeypatch.setitem(sys.modules, "nnconsole.app.config.page", broken)
    monkeypatch.setitem(sys.modules, "nnconsole.app.training.page", None)  # import raises ImportError
    window = make_window(tab_keys=("edit", "dataset", "config", "training"))
    assert calls == [(window.document, window)]
    assert window.pages["dataset"].text() == "fake dataset page"
    assert "ZeroDivisionError" in window.findChild(QLabel, "placeholder_label_config").text()
    assert window.pages["training"].objectName() == "placeholder_training"


def test_real_tab_modules_load_when_present(make_window):
    window = make_window(tab_keys=tuple(key for key, _, _ in TABS))
    for key, _, _ in TABS:
        present = importlib.util.find_spec(f"nnconsole.app.{key}") is not None and \
            importlib.util.find_spec(f"nnconsole.app.{key}.page") is not None
        assert window.pages[key].objectName().startswith("placeholder_") is not present, key


def test_title_marks_unsaved_changes(window, template_project):
    assert window.windowTitle() == "untitled — nnconsole"
    assert window.files.open_path(template_project)
    assert window.windowTitle() == "digits/project.yaml — nnconsole"
    window.edit_page.editor.add_layer("ReLU", after="fc2")
    assert window.windowTitle() == "digits/project.yaml* — nnconsole"
    window.actions_by_name["undo"].trigger()
    assert window.windowTitle() == "digits/project.yaml — nnconsole"
    window.actions_by_name["redo"].trigger()
    window.actions_by_name["save"].trigger()
    assert window.windowTitle() == "digits/project.yaml — nnconsole"
    assert "ReLU" in load_valid_project(template_project, check_datasets=False).network.names()


def test_new_project_through_the_template_chooser(window, tmp_path, monkeypatch):
    def choose(parent, start_dir):  # the real dialog, filled in as a user would, without exec()
        dialog = TemplateChooserDialog(parent, start_dir)
        dialog.select_template("iris_mlp")
        assert "iris" in dialog.description.text().lower()
        dialog.location.setText(str(tmp_path))
        assert dialog.folder_name.text() == "iris_mlp"
        return dialog.selection()

    monkeypatch.setattr(dialogs, "choose_template", choose)
    window.actions_by_name["new"].trigger()
    path = str(tmp_path / "iris_mlp" / "project.yaml")
    assert window.document.path == path and window.document.project.name == "iris_mlp"
    assert os.path.isfile(tmp_path / "iris_mlp" / "data" / "train.csv")
    assert window.settings.recent_projects() == [path]
    assert window.edit_page.scene.nodes() and not window.document.modified


def test_template_chooser_refuses_a_folder_in_use(qtbot, tmp_path):
    (tmp_path / "digits_cnn").mkdir()
    (tmp_path / "digits_cnn" / "keep.txt").write_text("mine")
    dialog = TemplateChooserDialog(None, str(tmp_path))
    qtbot.addWidget(dialog)
    assert dialog.list.count() >= 4 and dialog.current_template() == "digits_cnn"
    assert dialog.folder_name.text() == "digits_cnn_2"  # a free name is proposed
    dialog.folder_name.setText("digits_cnn")
    ok = dialog.buttons.buttons()[0]
    assert not ok.isEnabled() and "not empty" in dialog.target.text()


def test_open_save_as_and_recent_projects(window, template_project, tmp_path, monkeypatch):
    monkeypatch.setattr(dialogs, "ask_open_project", lambda parent, start: template_project)
    window.actions_by_name["open"].trigger()
    assert window.document.path == template_project
    target = str(tmp_path / "elsewhere" / "copy.yaml")
    monkeypatch.setattr(dialogs, "ask_save_path", lambda parent, suggested: target)
    window.actions_by_name["save_as"].trigger()
    assert window.document.path == target and window.windowTitle() == "elsewhere/copy.yaml — nnconsole"
    copy = load_valid_project(target, check_datasets=False)
    assert copy.datasets.training == "../digits/data/train.csv"  # still the same CSV file
    assert "--allow-outside-data" in window.statusBar().currentMessage()
    assert window.settings.recent_projects() == [target, template_project]
    os.remove(template_project)  # a vanished project is dropped from the menu and the setting
    window.rebuild_recent_menu()
    recent = [a.toolTip() for a in window.recent_menu.actions() if a.objectName().startswith("action_recent_")]
    assert recent == [target]
    assert window.settings.get(app_settings.RECENT_PROJECTS) == [target]


@pytest.mark.slow
def test_one_open_refreshes_each_tab_once_and_only_a_new_file_is_a_path_change(make_window, template_project,
                                                                               tmp_path, monkeypatch, qtbot):
    """Opening announces a different project (reloaded) and no path change: every tab rebuilds once.
    Saving to the same file announces nothing; Save As announces the new path, once."""
    from nnconsole.app.config.commands import set_setting
    from nnconsole.app.config.page import ConfigPage
    from nnconsole.app.dataset.page import DatasetPage
    from nnconsole.app.edit.page import EditPage
    from nnconsole.app.evaluation.page import EvaluationPage
    from nnconsole.app.training.page import TrainingPage

    calls = []
    for cls, name in ((EditPage, "refresh"), (DatasetPage, "refresh"), (ConfigPage, "reload"),
                      (TrainingPage, "refresh_history"), (EvaluationPage, "refresh_runs")):
        def counted(self, *args, _original=getattr(cls, name), _name=cls.__name__):
            calls.append(_name)
            return _original(self, *args)
        monkeypatch.setattr(cls, name, counted)
    window = make_window(tab_keys=tuple(key for key, _, _ in TABS))
    paths = []
    window.document.path_changed.connect(paths.append)
    qtbot.wait(50)
    calls.clear()
    assert window.files.open_path(template_project)
    qtbot.wait(400)  # past the DATASET tab's debounce of network changes
    assert sorted(calls) == ["ConfigPage", "DatasetPage", "EditPage", "EvaluationPage", "TrainingPage"]
    assert paths == []

    set_setting(window.document, "config.max_epoch", 7)
    qtbot.wait(50)
    calls.clear()
    assert window.files.save() and not window.document.modified
    qtbot.wait(50)
    assert paths == [] and calls == [] and window.windowTitle() == "digits/project.yaml — nnconsole"

    target = str(tmp_path / "elsewhere" / "copy.yaml")
    monkeypatch.setattr(dialogs, "ask_save_path", lambda parent, suggested: target)
    assert window.files.save_as()
    assert paths == [target] and window.windowTitle() == "elsewhere/copy.yaml — nnconsole"
    assert "TrainingPage" in calls and "EvaluationPage" in calls


@pytest.mark.parametrize("answer", ["cancel", "discard", "save"])
def test_unsaved_changes_prompt_on_close(window, template_project, monkeypatch, answer):
    asked = []
    monkeypatch.setattr(dialogs, "ask_save_changes", lambda parent, name: asked.append(name) or answer)
    window.files.open_path(template_project)
    window.show()
    window.edit_page.editor.add_layer("Dropout", after="relu3")
    closed = window.close()
    assert asked == ["digits/project.yaml"]
    saved = "Dropout" in load_valid_project(template_project, check_datasets=False).network.names()
    if answer == "cancel":
        assert not closed and window.isVisible() and window.document.modified and not saved
    else:
        assert closed and not window.isVisible()
        assert saved is (answer == "save")


def test_opening_a_broken_network_still_opens_for_editing(window, template_project, monkeypatch):
    text = open(template_project).read().replace("out_shape: 64", "out_shape: 0")
    with open(template_project, "w") as fh:
        fh.write(text)
    assert window.files.open_path(template_project)
    assert window.edit_page.scene.node("fc1").error
    assert "fc1" in [i.layer for i in window.edit_page.issues.issues]
    assert "1 problem" in window.statusBar().currentMessage()


def test_files_that_are_not_projects_are_explained(window, tmp_path, monkeypatch):
    shown = []
    monkeypatch.setattr(dialogs, "show_project_error", lambda parent, action, path, exc: shown.append(exc.kind))
    newer = tmp_path / "newer.yaml"
    newer.write_text("format_version: 99\nname: x\n")
    garbage = tmp_path / "garbage.yaml"
    garbage.write_text("format_version: 2\nnetwork: [\n")
    assert not window.files.open_path(str(newer))
    assert not window.files.open_path(str(garbage))
    assert shown == ["unsupported-version", "invalid"]
    assert window.document.path is None


def test_window_layout_is_remembered(make_window, settings, qtbot):
    first = make_window(settings_=settings)
    first.resize(760, 560)  # inside the offscreen platform's 800x600 screen
    first.show()
    first.tabs.setCurrentIndex(2)
    first.edit_page.h_split.setSizes([150, 600, 350])
    first.edit_page.side_tabs.setCurrentIndex(1)
    qtbot.waitExposed(first)
    sizes = first.edit_page.h_split.sizes()
    first.close()
    second = make_window(settings_=settings)
    second.show()
    qtbot.waitExposed(second)
    assert (second.width(), second.height()) == (760, 560)
    assert second.tabs.currentIndex() == 2 and second.edit_page.side_tabs.currentIndex() == 1
    second.show_tab("edit")  # a hidden tab gets its final geometry when it is shown
    qtbot.waitUntil(lambda: second.edit_page.h_split.sizes() == sizes, timeout=2000)


def test_edit_shortcuts_only_work_on_the_edit_tab(window):
    assert window.edit_page.edit_actions["delete"].isEnabled()
    window.show_tab("dataset")
    assert not window.edit_page.edit_actions["delete"].isEnabled()
    window.show_tab("edit")
    assert window.edit_page.edit_actions["delete"].isEnabled()
    assert isinstance(window.findChild(QWidget, "network_view"), QWidget)


def test_keyboard_delete_acts_on_the_canvas_only_and_ctrl_z_undoes(window, template_project, qtbot):
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    window.show()
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=2000)  # shortcuts need the active window
    window.files.open_path(template_project)
    page = window.edit_page
    page.select_layers(["conv2"])
    page.palette.tree.setFocus()
    QTest.keyClick(page.palette.tree, Qt.Key_Delete)
    assert "conv2" in page.document.project.network.names()
    page.view.setFocus()
    qtbot.waitUntil(page.view.hasFocus, timeout=2000)
    QTest.keyClick(page.view, Qt.Key_Delete)
    assert "conv2" not in page.document.project.network.names()
    QTest.keyClick(page.view, Qt.Key_Z, Qt.ControlModifier)
    assert "conv2" in page.document.project.network.names()


def test_saving_an_untitled_project_asks_where(window, tmp_path, monkeypatch):
    window.edit_page.add_layer("Input")
    assert window.windowTitle() == "untitled* — nnconsole"
    target = str(tmp_path / "mine" / "project.yaml")
    monkeypatch.setattr(dialogs, "ask_save_path", lambda parent, suggested: target)
    window.actions_by_name["save"].trigger()
    assert window.document.path == target and not window.document.modified
    assert window.windowTitle() == "mine/project.yaml — nnconsole"
    assert load_project(target).network.names() == ["Input"]


def test_open_dialog_imports_an_nnc_project(window, tmp_path, monkeypatch):
    import shutil

    data = os.path.join(TEST_DATA, "interop")
    for name in ("nnc_tiny_cnn.sdcproj", "tiny_train.csv", "tiny_valid.csv"):
        shutil.copy(os.path.join(data, name), tmp_path / name)
    source = str(tmp_path / "nnc_tiny_cnn.sdcproj")
    target = str(tmp_path / "imported.yaml")
    monkeypatch.setattr(dialogs, "ask_open_project", lambda parent, start: source)
    monkeypatch.setattr(dialogs, "ask_import_target", lambda parent, src: target)
    reports = []
    monkeypatch.setattr(dialogs, "show_import_report", lambda parent, text: reports.append(text))
    window.actions_by_name["open"].trigger()
    assert window.document.path == target
    saved = load_valid_project(target, check_datasets=False)
    assert saved.network == window.document.project.network  # the editor shows what was saved
    assert any(layer.position for layer in saved.network.layers)  # NNC's canvas positions kept
    assert not window.document.modified
    assert all("imported" in text for text in reports)
    # The file's repeat block is kept as a block on import: the user is told so, once, naming the source.
    [report] = reports
    assert report.splitlines()[0] == f"imported {source}"
    assert "notes:" in report and "repeat block 'RepeatStart' x2 (Convolution_2, Tanh) kept as a block" in report
    assert saved.network.layer("RepeatStart").params == {"times": 2}


def test_cancelling_the_import_target_opens_nothing(window, tmp_path, monkeypatch):
    source = str(tmp_path / "model.nntxt")
    open(source, "w").write("network { name: 'x' }\n")
    before = window.document.project
    monkeypatch.setattr(dialogs, "ask_open_project", lambda parent, start: source)
    monkeypatch.setattr(dialogs, "ask_import_target", lambda parent, src: None)
    window.actions_by_name["open"].trigger()
    assert window.document.project is before and not os.path.exists(tmp_path / "model.yaml")


def test_the_console_freezes_its_start_up_objects_once_the_window_is_up(monkeypatch):
    """Full garbage collections must not walk the ~70,000 objects of a started console (they paused
    redraws for 12-28 ms): main() freezes them after the window has opened its project."""
    import gc

    from nnconsole.app import cli
    from nnconsole.app.shell import application as console_app_main, main_window

    calls = []

    class FakeWindow:
        def show(self):
            calls.append("show")

        def start(self, project):
            calls.append(("start", project))

    class FakeApp:
        def exec(self):
            calls.append("exec")
            return 0

    monkeypatch.setattr(cli, "has_display", lambda: True)
    monkeypatch.setattr(main_window, "MainWindow", FakeWindow)
    monkeypatch.setattr(console_app_main, "create_application", lambda: FakeApp())
    monkeypatch.setattr(console_app_main, "freeze_startup_objects", lambda: calls.append("freeze") or 1)
    assert console_app_main.main(["p.yaml"]) == 0
    assert calls == ["show", ("start", "p.yaml"), "freeze", "exec"]

    monkeypatch.undo()
    try:
        frozen = console_app_main.freeze_startup_objects()
        assert frozen == gc.get_freeze_count() > 10_000
        assert gc.get_count()[2] == 0  # nothing left waiting for a full collection
    finally:
        gc.unfreeze()
