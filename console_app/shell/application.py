"""Starting the desktop console: the QApplication and ``main`` (the ``nnconsole-gui`` launcher)."""
from __future__ import annotations

import argparse
import gc
import sys
from typing import List, Optional


MAIN_THREAD_GC = "nnconsole-main-thread-gc"


def create_application(argv: Optional[List[str]] = None):
    """The one QApplication, named so settings and autosaves land in nnconsole's folders."""
    from PySide6.QtCore import QObject
    from PySide6.QtWidgets import QApplication

    from nnconsole.app.shell.settings import APPLICATION, ORGANIZATION

    app = QApplication.instance()
    if app is None:
        app = QApplication(argv if argv is not None else [sys.argv[0]])
    app.setOrganizationName(ORGANIZATION)
    app.setApplicationName(APPLICATION)
    app.setApplicationDisplayName("nnconsole")
    app.setStyle("Fusion")
    if app.findChild(QObject, MAIN_THREAD_GC) is None:  # worker threads must never collect Qt wrappers
        from nnconsole.app.shell.main_thread_gc import install
        install(app).setObjectName(MAIN_THREAD_GC)
    return app


def freeze_startup_objects() -> int:
    """Leave the objects built at start-up out of later full garbage collections; returns their count.

    The modules, Qt wrappers and widgets of a started console are some 72,000 tracked objects that
    live until exit; a full collection walks all of them and paused the GUI for 12-28 ms, more than
    a frame, at unpredictable moments (measured with gc.callbacks around bench/gui.py).
    """
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def main(argv: Optional[List[str]] = None) -> int:
    """Open the main window (with PROJECT when given) and run until it closes."""
    parser = argparse.ArgumentParser(prog="nnconsole-gui", description="The nnconsole desktop console.")
    parser.add_argument("project", nargs="?", help="project YAML file to open")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    from nnconsole.app.cli import EXIT_NO_DISPLAY, NO_DISPLAY_MESSAGE, has_display

    if not has_display():
        print(NO_DISPLAY_MESSAGE, file=sys.stderr)
        return EXIT_NO_DISPLAY
    from nnconsole.app.shell.qt_libraries import missing_libraries_message, missing_xcb_libraries

    missing = missing_xcb_libraries()
    if missing:  # Qt would abort inside QApplication() with "no Qt platform plugin could be initialized"
        print(missing_libraries_message(missing), file=sys.stderr)
        return EXIT_NO_DISPLAY
    app = create_application()
    from nnconsole.app.shell import error_hook
    from nnconsole.app.shell.main_window import MainWindow

    uninstall_hook = error_hook.install()  # unexpected errors: a dialog and gui-errors.log, not only stderr
    try:
        window = MainWindow()
        window.show()
        window.start(args.project)
        freeze_startup_objects()
        return int(app.exec())
    finally:
        uninstall_hook()


if __name__ == "__main__":
    sys.exit(main())
