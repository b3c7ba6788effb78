#!/usr/bin/env python3
"""The console's main flow on a real X server (Xvfb), with screenshots of each screen.

    .venv/bin/python scripts/xvfb_flow.py --out /tmp/flow     # needs Debian's xvfb and xdotool

It starts Xvfb on a free display, then the real app (the same QApplication, error hook and
MainWindow as ``nnconsole-gui``, on Qt's xcb platform) in a child process that goes through: the
start page, a new project from the digits_cnn template (a real double-click by xdotool), Run with 2
workers (the Run button clicked by xdotool; the run waits for Stop in its second epoch, test seam
pause_at_iteration), Stop, Resume with 2 workers, Evaluate, Infer on the
validation CSV, and Delete the run from its menu (Yes clicked on the real question; the run goes to the desktop
trash under the flow's own XDG_DATA_HOME). After each screen it saves the whole X screen as a PNG in --out; flow.json lists
the steps with ok / failed / skipped and why. Settings, autosaves and the project live in a
temporary folder, never the user's. Exit status: 0 every step ok, 1 a step failed, 77 Xvfb,
xdotool or a library Qt's xcb plugin needs is missing (nothing ran; the message names the packages).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List

SKIPPED = 77
SCREEN = (1280, 860)


# ---- the parent: Xvfb ---------------------------------------------------------------------------------
def missing_packages() -> List[str]:
    """Debian packages the flow needs and this machine lacks: Xvfb, xdotool and Qt's xcb libraries."""
    from nnconsole.app.shell.qt_libraries import XCB_LIBRARIES, missing_xcb_libraries

    tools = [package for tool, package in (("Xvfb", "xvfb"), ("xdotool", "xdotool")) if shutil.which(tool) is None]
    libraries = missing_xcb_libraries({"QT_QPA_PLATFORM": "xcb"})
    return tools + [XCB_LIBRARIES[soname][0] for soname in libraries]


def start_xvfb() -> tuple:
    """Xvfb on the first free display (it writes the number it took on the pipe): (process, ':N')."""
    read_fd, write_fd = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(write_fd), "-screen", "0", f"{SCREEN[0]}x{SCREEN[1]}x24",
                             "-nolisten", "tcp"], pass_fds=(write_fd,), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    os.close(write_fd)
    with os.fdopen(read_fd) as pipe:
        number = pipe.readline().strip()
    if not number:
        proc.kill()
        raise RuntimeError("Xvfb did not start")
    return proc, f":{number}"


def run_flow(out: str, timeout: float) -> int:
    missing = missing_packages()
    if missing:
        print(f"skipped: not installed: {' '.join(missing)} (Debian: apt-get install -y {' '.join(missing)})")
        return SKIPPED
    os.makedirs(out, exist_ok=True)
    xvfb, display = start_xvfb()
    home = tempfile.mkdtemp(prefix="nnconsole-xvfb-")
    env = dict(os.environ, DISPLAY=display, QT_QPA_PLATFORM="xcb", XDG_CONFIG_HOME=os.path.join(home, "config"),
               XDG_DATA_HOME=os.path.join(home, "data"), XDG_CACHE_HOME=os.path.join(home, "cache"))
    env.pop("WAYLAND_DISPLAY", None)
    try:
        child = subprocess.run([sys.executable, os.path.abspath(__file__), "--drive", "--out", os.path.abspath(out),
                                "--work", home], env=env, timeout=timeout)
        return child.returncode
    except subprocess.TimeoutExpired:
        print(f"failed: the flow took more than {timeout:.0f} s")
        return 1
    finally:
        xvfb.terminate()
        xvfb.wait(10)
        shutil.rmtree(home, ignore_errors=True)


# ---- the child: the app on the X display --------------------------------------------------------------
class Flow:
    """Drives one MainWindow step by step; each step is recorded, a failed one ends the flow."""

    def __init__(self, app: Any, window: Any, out: str, work: str) -> None:
        self.app, self.window, self.out, self.work = app, window, out, work
        self.steps: List[Dict[str, str]] = []
        self.run_dir = ""

    def wait(self, condition: Callable[[], Any], seconds: float, what: str) -> None:
        end = time.monotonic() + seconds
        while not condition():
            if time.monotonic() > end:
                raise TimeoutError(f"waited {seconds:.0f} s for {what}")
            self.app.processEvents()
            time.sleep(0.02)
        self.app.processEvents()

    def settle(self, seconds: float = 0.4) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.app.processEvents()
            time.sleep(0.02)

    def shot(self, name: str) -> str:
        """The whole X screen as the X server has it (what a person would see)."""
        self.settle()
        path = os.path.join(self.out, f"{name}.png")
        if not self.app.primaryScreen().grabWindow(0).save(path):
            raise RuntimeError(f"could not save {path}")
        return path

    def xdotool(self, *args: str) -> None:
        subprocess.run(["xdotool", *args], check=True, timeout=20)
        self.settle(0.3)

    def click(self, widget: Any, double: bool = False) -> None:
        """A real mouse click in the middle of ``widget`` through the X server."""
        self.click_at(widget, widget.rect().center(), double)

    def click_at(self, widget: Any, point: Any, double: bool = False) -> None:
        self.wait(lambda: widget.isVisible() and widget.isEnabled(), 10, f"{widget.objectName() or widget} to show")
        self.settle(0.3)  # a page just shown is laid out in the next event-loop turns
        where = widget.mapToGlobal(point)
        self.xdotool("mousemove", "--sync", str(where.x()), str(where.y()))
        self.xdotool("click", *(["--repeat", "2", "--delay", "80"] if double else []), "1")

    def step(self, name: str, action: Callable[[], str]) -> bool:
        started = time.monotonic()
        try:
            note = action() or ""
            status = "skipped" if note.startswith("skipped") else "ok"
        except Exception as exc:  # the flow reports and stops; the traceback goes to stderr
            import traceback

            traceback.print_exc()
            note, status = f"{type(exc).__name__}: {exc}", "failed"
            self.report_failure(name)
        self.steps.append({"step": name, "status": status, "note": note,
                           "seconds": f"{time.monotonic() - started:.1f}"})
        print(f"{name}: {status} {note}", flush=True)
        return status != "failed"

    def report_failure(self, name: str) -> None:
        """What a failed step leaves to look at: the screen, the status line and the run's logs."""
        try:
            self.shot("failed_" + name.replace(" ", "_"))
        except Exception as exc:  # a broken display must not hide the step's own error
            print(f"no screenshot: {exc}", file=sys.stderr)
        page = self.window.pages.get("training")
        if hasattr(page, "status"):
            print(f"TRAINING status line: {page.status.text()}", file=sys.stderr)
        logs = os.path.join(self.run_dir, "logs") if self.run_dir else ""
        for log in sorted(os.listdir(logs)) if logs and os.path.isdir(logs) else []:
            with open(os.path.join(logs, log), encoding="utf-8", errors="replace") as f:
                print(f"---- {log} (last lines)\n" + "".join(f.readlines()[-15:]), file=sys.stderr)

    # ---- the steps ------------------------------------------------------------------------------------
    def start_page(self) -> str:
        self.window.start()
        self.wait(lambda: self.window.stack.currentWidget() is self.window.start_page, 5, "the start page")
        self.shot("01_start_page")
        return "first start: templates, no recent projects or runs"

    def new_from_template(self) -> str:
        from PySide6.QtCore import Qt

        from nnconsole.app.shell import dialogs
        from nnconsole.app.shell.templates_dialog import TemplateChooserDialog

        def choose(parent: Any, start_dir: str, template: Any = None) -> Any:  # the real dialog, shown, filled in
            dialog = TemplateChooserDialog(parent, self.work)
            if template:
                dialog.select_template(template)
            dialog.show()
            self.shot("02_template_chooser")
            choice = dialog.selection()
            dialog.close()
            return choice

        dialogs.choose_template = choose
        templates = self.window.start_page.templates
        row = next(i for i in range(templates.count()) if templates.item(i).data(Qt.UserRole) == "digits_cnn")
        rect = templates.visualItemRect(templates.item(row))
        self.click_at(templates.viewport(), rect.center(), double=True)  # xdotool: a real double-click
        self.wait(lambda: self.window.document.path, 60, "the new project to open")
        # Three short epochs: the run pauses in the second (pause_at_iteration, set in run_two_workers) until
        # Stop, so Stop always finds it running however fast the machine; Resume then trains a little.
        self.window.document.set_setting("config.max_epoch", 3)
        self.window.files.save()
        self.shot("03_edit")
        return self.window.document.path

    def run_two_workers(self) -> str:
        page = self.window.pages["training"]
        self.xdotool("windowfocus", "--sync", str(int(self.window.winId())))
        self.xdotool("key", "ctrl+4")  # View > TRAINING Tab, typed on the X keyboard
        self.wait(lambda: self.window.tabs.currentWidget() is page, 5, "ctrl+4 to show TRAINING")
        from nnconsole.engine.test_seams import seam_environment

        page.workers.setValue(2)
        # The workers wait a few iterations into the second epoch (after the first validation record the
        # screenshot shows) until Stop comes; they inherit the variable from this process through the launcher.
        os.environ.update(seam_environment(pause_at_iteration=self.iterations_per_epoch(2) + 5))
        self.click(page.run_button)
        self.wait(lambda: page.controller.is_running() and page.controller.run_dir, 120, "the run to start")
        self.run_dir = page.controller.run_dir
        self.wait(lambda: any(r.get("type") == "validation" for r in page.controller.records_so_far())
                  or not page.controller.is_running(), 300, "the first validation record")
        self.shot("04_training_2_workers")
        return self.run_dir

    def iterations_per_epoch(self, workers: int) -> int:
        """The open project's iterations in one epoch on ``workers`` workers (its training rows, its plan)."""
        from nnconsole.engine.plan.worker_plan import make_plan

        document = self.window.document
        training = os.path.join(os.path.dirname(document.path), document.project.datasets.training)
        with open(training, encoding="utf-8") as fh:
            rows = sum(1 for line in fh if line.strip()) - 1  # the header
        return make_plan(document.project, workers, dataset_size=rows).iterations_per_epoch

    def stop(self) -> str:
        from nnconsole.engine.rundir import store as runs
        from nnconsole.engine.rundir.protocol import RunStatus

        page = self.window.pages["training"]
        if not page.controller.is_running():
            raise RuntimeError("the run ended before Stop")
        self.click(page.stop_button)
        self.wait(lambda: not page.controller.is_running(), 120, "the run to stop")
        self.settle(1.0)
        status = runs.read_status(self.run_dir)
        if status is None or status.status != RunStatus.STOPPED:
            raise RuntimeError(f"status after Stop: {status.status if status else None}")
        self.shot("05_stopped")
        return f"stopped at epoch {status.epoch}, checkpoint {bool(runs.latest_checkpoint(self.run_dir))}"

    def resume(self) -> str:
        from nnconsole.engine.rundir import store as runs
        from nnconsole.engine.rundir.protocol import RunStatus

        page = self.window.pages["training"]
        if not page.resume_run(self.run_dir, workers=2):
            raise RuntimeError("Resume was refused")
        started = time.monotonic()

        def finished() -> bool:
            if page.controller.is_running():
                return False
            status = runs.read_status(self.run_dir)
            if status is not None and status.status == RunStatus.FINISHED:
                return True
            if time.monotonic() - started > 30:  # the launch had time to start: it ended otherwise
                raise RuntimeError(f"the resumed run ended {status.status if status else None}: "
                                   f"{page.status.text()}")
            return False

        self.wait(finished, 420, "the resumed run to finish")
        self.settle(1.0)
        status = runs.read_status(self.run_dir)
        if status is None or status.status != RunStatus.FINISHED:
            raise RuntimeError(f"status after Resume: {status.status if status else None}")
        self.shot("06_resumed_finished")
        return f"finished, {status.workers} workers, best validation error {status.best_validation_error}"

    def evaluate(self) -> str:
        page = self.window.pages["evaluation"]
        if not hasattr(page, "show_run"):
            return "skipped: no EVALUATION tab in this build"
        self.window.show_tab("evaluation")
        if not page.show_run(self.run_dir, view="evaluation"):
            raise RuntimeError("the run is not listed in EVALUATION")
        self.click(page.evaluate_button)
        self.wait(lambda: page._pending is not None or page.folder, 15, "the Evaluate click to start it")
        self.wait(lambda: page._pending is None and page.folder, 300, "the evaluation")
        self.shot("07_evaluation")
        return page.folder

    def infer(self) -> str:
        page = self.window.pages["evaluation"]
        if not hasattr(page, "inference"):
            return "skipped: no Inference view in this build"
        page.show_run(self.run_dir, view="inference")
        validation = os.path.join(os.path.dirname(self.window.document.path), "data", "validation.csv")
        page.inference.set_data([validation])
        self.click(page.inference.infer_button)
        self.wait(lambda: page.inference.command.is_running() or page.inference.model.rowCount() > 0, 15,
                  "the Infer click to start the inference")
        self.wait(lambda: not page.inference.command.is_running() and page.inference.model.rowCount() > 0, 300,
                  "the inference results")
        self.shot("08_inference")
        return f"{page.inference.model.rowCount()} rows"

    def delete_run(self) -> str:
        """TRAINING > the run's menu > Delete (move to trash) > Yes, clicked on the real question: the run goes
        to the desktop trash (XDG_DATA_HOME/Trash, in the flow's own folder) through QFile.moveToTrash."""
        from PySide6.QtCore import QTimer
        from PySide6.QtWidgets import QApplication, QMessageBox

        page = self.window.pages["training"]
        self.window.show_tab("training")
        data = os.environ["XDG_DATA_HOME"]
        os.makedirs(data, exist_ok=True)  # a desktop has it; Qt makes no trash without it
        asked: List[str] = []

        def answer_yes() -> None:
            box = QApplication.activeModalWidget()
            if not isinstance(box, QMessageBox):
                QTimer.singleShot(200, answer_yes)
                return
            asked.append(box.text())
            self.shot("09_delete_question")
            self.click(box.button(QMessageBox.Yes))

        QTimer.singleShot(300, answer_yes)
        menu = page.build_run_menu(self.run_dir)
        next(a for a in menu.actions() if a.objectName() == "run_menu_delete").trigger()  # returns once answered
        self.wait(lambda: not os.path.exists(self.run_dir), 30, "the run to leave the results folder")
        trashed = os.path.join(data, "Trash", "files", os.path.basename(self.run_dir))
        if not os.path.isfile(os.path.join(trashed, "status.json")):
            raise RuntimeError(f"the run is not in the desktop trash ({trashed}): {page.status.text()}")
        if any(r.run_dir == self.run_dir for r in page.rows):
            raise RuntimeError("the deleted run is still listed in the history")
        self.shot("10_deleted")
        return f"moved to {trashed} after '{asked[0].splitlines()[0] if asked else ''}'"


def drive(out: str, work: str) -> int:
    from PySide6.QtCore import QSettings

    from nnconsole.app.shell import error_hook
    from nnconsole.app.shell.application import create_application
    from nnconsole.app.shell.main_window import MainWindow
    from nnconsole.app.shell.settings import Settings

    app = create_application()
    uninstall = error_hook.install()
    settings = Settings(QSettings(os.path.join(work, "settings.ini"), QSettings.IniFormat))
    window = MainWindow(settings=settings)
    window.setGeometry(0, 0, SCREEN[0], SCREEN[1])
    window.show()
    flow = Flow(app, window, out, work)
    flow.wait(lambda: window.isVisible() and window.windowHandle() and window.windowHandle().isExposed(), 20,
              "the window on the X display")
    steps = (("start page", flow.start_page), ("new project from a template", flow.new_from_template),
             ("Run with 2 workers", flow.run_two_workers), ("Stop", flow.stop), ("Resume", flow.resume),
             ("Evaluate", flow.evaluate), ("Infer", flow.infer), ("Delete the run", flow.delete_run))
    ok = True
    for name, action in steps:
        if ok:
            ok = flow.step(name, action)
        else:
            flow.steps.append({"step": name, "status": "not run", "note": "an earlier step failed", "seconds": "0"})
    with open(os.path.join(out, "flow.json"), "w", encoding="utf-8") as f:
        json.dump(flow.steps, f, indent=1)
    window.document.undo_stack.setClean()
    training = window.pages["training"]
    if hasattr(training, "controller") and training.controller.is_running():
        training.stop_run()
    window.close()
    uninstall()
    return 0 if ok else 1


def main(argv: Any = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="xvfb-flow", help="folder for the screenshots and flow.json")
    parser.add_argument("--timeout", type=float, default=900, help="seconds for the whole flow")
    parser.add_argument("--drive", action="store_true", help=argparse.SUPPRESS)  # the child, on the display
    parser.add_argument("--work", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.drive:
        return drive(args.out, args.work)
    return run_flow(args.out, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
