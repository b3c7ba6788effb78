"""The process rule, checked at run time: the GUI process never loads nnabla or mpi4py (docs/architecture.md).

The import-linter contracts check what the GUI's modules import; this checks what a real GUI process loads.
A fresh interpreter imports every module of ``nnconsole.app``, opens the main window with all its tabs
(offscreen) and imports an ``.nntxt`` through File > Open, the real code path (``nnconsole import`` in a
subprocess), then reports ``sys.modules``. Reading an ``.nntxt`` needs nnabla's protobuf modules: an import
run in the GUI process would load nnabla and fail this test.
"""
from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.gui.support import ROOT, TEST_DATA


DATA = os.path.join(TEST_DATA, "interop")
FORBIDDEN = ("nnabla", "nnabla_ext", "mpi4py")

_GUI_PROCESS = r"""
import importlib, json, os, pkgutil, sys, time
os.environ["QT_QPA_PLATFORM"] = "offscreen"
source, target, settings_file = sys.argv[1:4]
FORBIDDEN = ("nnabla", "nnabla_ext", "mpi4py")

import nnconsole.app
modules = [info.name for info in pkgutil.walk_packages(nnconsole.app.__path__, "nnconsole.app.")]
for name in modules:
    importlib.import_module(name)
loaded_by_imports = [m for m in FORBIDDEN if m in sys.modules]

from PySide6.QtCore import QSettings, QStandardPaths
QStandardPaths.setTestModeEnabled(True)  # never the user's settings or autosave folder
from nnconsole.app.shell.application import create_application
app = create_application(["gui-process-rule"])
app.setOrganizationName("nnconsole-test-process-rule")
from nnconsole.app.shell import dialogs
from nnconsole.app.shell.main_window import MainWindow
from nnconsole.app.shell.settings import Settings

reports, errors = [], []
dialogs.ask_open_project = lambda parent, start: source
dialogs.ask_import_target = lambda parent, src: target
dialogs.show_import_report = lambda parent, text: reports.append(text)
dialogs.show_error = lambda parent, *text: errors.append(text)
dialogs.show_project_error = lambda parent, *text: errors.append(tuple(map(str, text)))

window = MainWindow(settings=Settings(QSettings(settings_file, QSettings.IniFormat)))  # every tab
window.show()
window.actions_by_name["open"].trigger()
deadline = time.monotonic() + 120
while window.document.path != target and not errors and time.monotonic() < deadline:
    app.processEvents()
    time.sleep(0.01)
print(json.dumps({"modules": modules, "loaded_by_imports": loaded_by_imports, "errors": errors,
                  "opened": window.document.path, "layers": window.document.project.network.names(),
                  "modified": window.document.modified, "reports": reports,
                  "loaded": [m for m in FORBIDDEN if m in sys.modules]}))
window.document.undo_stack.setClean()
window.close()
"""


@pytest.mark.slow  # a fresh interpreter with Qt and every GUI module, plus the import CLI (~5 s)
def test_a_gui_process_that_imports_an_nntxt_never_loads_nnabla_or_mpi4py(tmp_path):
    for name in ("nnc_tiny_repeat.nntxt", "tiny_train.csv", "tiny_valid.csv"):
        shutil.copy(os.path.join(DATA, name), tmp_path / name)
    source, target = str(tmp_path / "nnc_tiny_repeat.nntxt"), str(tmp_path / "imported" / "project.yaml")
    os.makedirs(os.path.dirname(target))
    done = subprocess.run([sys.executable, "-c", _GUI_PROCESS, source, target, str(tmp_path / "settings.ini")],
                          capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    # Every GUI module was imported, the shell's and each tab's among them.
    for expected in ("nnconsole.app.shell.main_window", "nnconsole.app.bridge.import_runner",
                     "nnconsole.app.document.project_files", "nnconsole.app.edit.page", "nnconsole.app.training.page",
                     "nnconsole.app.evaluation.page", "nnconsole.app.config.page", "nnconsole.app.dataset.page"):
        assert expected in seen["modules"], expected
    assert seen["loaded_by_imports"] == []
    # The import really happened: the written project is open, and its report reached the user.
    assert seen["errors"] == []
    assert seen["opened"] == target and os.path.isfile(target)
    assert "RepeatStart" in seen["layers"] and not seen["modified"]
    [report] = seen["reports"]
    assert report.splitlines()[0] == f"imported {source}" and "kept as a block" in report
    assert seen["loaded"] == [], f"the GUI process loaded {seen['loaded']}"


# What starts a process, or builds the CLI's command line. Outside nnconsole.app.bridge the GUI may use the
# bridge's helpers (EngineCommand, start_engine ...) but none of these.
PROCESS_MODULES = {"subprocess", "multiprocessing", "pty"}
PROCESS_NAMES = {"QProcess", "Popen", "startDetached", "system", "popen", "posix_spawn", "posix_spawnp", "fork",
                 "spawnv", "spawnl", "execv", "execvp", "execl", "engine_program", "cli_command", "python_module_command"}


def _process_starts(source: str) -> list:
    """(line, what) for each process start or CLI command line built in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] in PROCESS_MODULES]
        elif isinstance(node, ast.ImportFrom):
            if (node.module or "").split(".")[0] in PROCESS_MODULES:
                found.append((node.lineno, node.module))
            found += [(node.lineno, a.name) for a in node.names if a.name in PROCESS_NAMES - {"QProcess"}]
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name in PROCESS_NAMES:
                found.append((node.lineno, name + "()"))
    return found


def test_only_the_bridge_starts_processes():
    app_dir = os.path.join(ROOT, "console_app")
    bridge = os.path.join(app_dir, "bridge")
    starts, bridge_starts = {}, {}
    for folder, _, names in os.walk(app_dir):
        for name in sorted(n for n in names if n.endswith(".py")):
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as fh:
                found = _process_starts(fh.read())
            if found:
                (bridge_starts if folder.startswith(bridge) else starts)[os.path.relpath(path, ROOT)] = found
    assert starts == {}, f"only console_app/bridge starts processes: {starts}"
    # The check sees the bridge's own starts (it is not vacuous).
    assert {"console_app/bridge/engine_process.py", "console_app/bridge/run_controller.py"} <= set(bridge_starts)
