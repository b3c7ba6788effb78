"""Screenshots of the EDIT tab for the docs: docs/screenshots/edit_tab.png and edit_statistics.png.

Opens a copy of the digits_cnn template in the main window offscreen at 1400x900, selects a layer
and saves the window. Settings and autosaves go to a throwaway folder (Qt's test mode).

    .venv/bin/python scripts/screenshot_edit.py [--out docs/screenshots] [--layer conv2]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "screenshots"))
    parser.add_argument("--layer", default="fc1", help="layer to select")
    parser.add_argument("--template", default="digits_cnn")
    args = parser.parse_args(argv)

    from PySide6.QtCore import QSettings, QStandardPaths
    from PySide6.QtWidgets import QApplication

    QStandardPaths.setTestModeEnabled(True)
    from nnconsole.app.shell.application import create_application

    app = create_application()
    app.setOrganizationName("nnconsole-screenshots")
    from nnconsole.app.shell.main_window import MainWindow
    from nnconsole.app.shell.settings import Settings
    from nnconsole.engine.project.templates import create_from_template

    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        project = create_from_template(args.template, os.path.join(tmp, args.template))
        settings = Settings(QSettings(os.path.join(tmp, "settings.ini"), QSettings.IniFormat))
        window = MainWindow(settings=settings, tab_keys=("edit",))
        window.resize(1400, 900)
        window.show()
        window.files.open_path(project, ask_save=False)
        page = window.edit_page
        QApplication.processEvents()
        page.auto_layout()  # the template stacks every layer in one column; tidy it as a user would
        window.document.undo_stack.clear()
        names = window.document.project.network.names()
        page.select_layers([args.layer if args.layer in names else names[0]])
        # 100% zoom from conv2 down (digits_cnn), where the label Input joins the loss
        page.view.zoom_reset()
        QApplication.processEvents()
        visible = page.view.mapToScene(page.view.viewport().rect()).boundingRect()
        anchor = page.scene.node("conv2") or page.scene.node(names[0])
        top = anchor.sceneBoundingRect().top() - 24
        page.view.centerOn(page.scene.nodes_rect().center().x(), top + visible.height() / 2)
        page.side_tabs.setCurrentIndex(0)
        window.statusBar().clearMessage()  # it names the throwaway temp folder
        QApplication.processEvents()
        path = os.path.join(args.out, "edit_tab.png")
        window.grab().save(path)
        print(f"wrote {path}")
        page.show_statistics()
        QApplication.processEvents()
        path = os.path.join(args.out, "edit_statistics.png")
        window.grab().save(path)
        print(f"wrote {path}")
        window.document.undo_stack.setClean()
        window.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
