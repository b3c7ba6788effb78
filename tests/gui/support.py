"""What the GUI tests build and do, shared by the test modules of every tab (their fixtures are in conftest.py).

- Projects and runs: the digits template copied to a temp folder (``copy_digits``), a run directory copied
  (``copy_run``), ``nnconsole`` run as the GUI runs it (``cli``), a tab page on a project (``open_tab_page``).
- Run directories written by hand (status.json, metrics.jsonl, an evaluation: ``fake_run``,
  ``train_records``, ``fake_regression_evaluation``), for tests that need a run's files but not the
  minutes it takes to train one.
- What a user does in the EDIT tab, as test steps: real clicks, typing and drags, offscreen
  (``palette_double_click``, ``type_into``, ``scene_point``, ``drag_connect``).
- ``wait_until``: process Qt events until a condition holds.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List, Optional

from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QLineEdit

from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.protocol import METRICS_FILE

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEST_DATA = os.path.join(ROOT, "tests", "data")
DIGITS = os.path.join(ROOT, "project_templates", "digits_cnn")


# ---- projects and runs ------------------------------------------------------------------------------
def copy_digits(dest: str, max_epoch: Optional[int] = None, workers: Optional[int] = None) -> str:
    """Copy the digits template to ``dest`` and return the project path.

    The project file and CSVs are copied; the 1,797 images are linked (a symlinked folder), which
    is much faster than copying them and reads the same. Never delete images through the link.
    """
    os.makedirs(os.path.join(dest, "data"))
    for name in ("project.yaml", "README.md"):
        shutil.copy2(os.path.join(DIGITS, name), os.path.join(dest, name))
    for name in ("train.csv", "validation.csv"):
        shutil.copy2(os.path.join(DIGITS, "data", name), os.path.join(dest, "data", name))
    os.symlink(os.path.join(DIGITS, "data", "images"), os.path.join(dest, "data", "images"))
    path = os.path.join(dest, "project.yaml")
    if max_epoch is not None or workers is not None:
        from nnconsole.engine.project.io import save_project

        project = load_valid_project(path, check_datasets=False)
        if max_epoch is not None:
            project.config.max_epoch = max_epoch
        if workers is not None:
            project.multi_gpu.workers = workers
        save_project(project, path, backup=False)
    return path


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``nnconsole`` as the GUI does (same interpreter, ``-m nnconsole``)."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return subprocess.run([sys.executable, "-m", "nnconsole.engine.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=ROOT)


def copy_run(run_dir: str, name: str) -> str:
    """A copy of a run directory next to it (same results root), for tests that alter a run."""
    dest = os.path.join(os.path.dirname(run_dir), name)
    shutil.copytree(run_dir, dest)
    return dest


def train_digits_run(folder: str) -> tuple:
    """(project path, run directory) of a finished 2-epoch digits run trained in ``folder`` by the CLI."""
    project = copy_digits(folder, max_epoch=2)
    done = cli("train", project, "--gpus", "1", "--quiet")
    assert done.returncode == 0, done.stderr
    found = runs.list_runs(runs.results_root(project))
    assert len(found) == 1, found
    return project, os.path.abspath(found[0])


def open_tab_page(qtbot, create_page: Callable, project_path: str):
    """A tab page (from its ``create_page``) on a document loaded from ``project_path``, shown at 1400x900."""
    from nnconsole.app.document.project_document import ProjectDocument

    document = ProjectDocument()
    document.load(project_path)
    page = create_page(document, None)
    qtbot.addWidget(page)
    page.resize(1400, 900)
    page.show()
    return page


def wait_until(qtbot, condition: Callable[[], bool], timeout: float = 30.0) -> None:
    """Process events until ``condition()`` holds (fails the test after ``timeout`` seconds)."""
    qtbot.waitUntil(condition, timeout=int(timeout * 1000))


# ---- run directories written by hand -------------------------------------------------------------------
def train_records(epochs: int, per_epoch: int = 23, every: int = 10) -> List[Dict[str, Any]]:
    """Train records every ``every`` iterations and validation records at each epoch end."""
    out: List[Dict[str, Any]] = []
    total = epochs * per_epoch
    for it in range(1, total + 1):
        if it % every == 0 or it % per_epoch == 0:
            out.append({"type": "train", "iteration": it, "epoch": it / per_epoch, "loss": 2.0 / it,
                        "error": 0.5, "lr": 0.001, "total_iterations": total, "elapsed": it * 0.1,
                        "eta": (total - it) * 0.1, "samples_per_s": 320.0})
        if it % per_epoch == 0:
            out.append({"type": "validation", "epoch": it // per_epoch, "iteration": it, "loss": 1.0 / it,
                        "error": 0.3, "count": 360, "best": True})
    return out


def fake_run(project_path: str, name: str, status: str = "finished", records: Optional[List[Dict]] = None,
             started: Optional[float] = None, **fields: Any) -> str:
    """A run directory ``name`` under the project's results root with the given status and records."""
    run_dir = os.path.join(runs.results_root(project_path), name)
    os.makedirs(run_dir)
    st = runs.StatusRecord(status=status, started=started or time.time(), workers=1, logical_batch=32, **fields)
    runs.write_status(run_dir, st)
    with open(os.path.join(run_dir, METRICS_FILE), "w") as fh:
        for record in records if records is not None else train_records(2):
            fh.write(json.dumps(record) + "\n")
    return os.path.abspath(run_dir)


def fake_regression_evaluation(run_dir: str, model: str = "best") -> str:
    """Saved parameters and a regression evaluation of ``run_dir`` (what ``nnconsole evaluate`` writes)."""
    from nnconsole.engine.metrics.results import evaluation_dir

    open(os.path.join(run_dir, f"parameters_{model}.h5"), "wb").close()
    folder = evaluation_dir(run_dir, model)
    os.makedirs(folder)
    metrics = {"task": "regression", "count": 3, "outputs": 1, "mae": 0.5, "rmse": 0.6, "r2": 0.7, "bias": 0.1,
               "max_abs_error": 1.0, "model": model, "run_dir": run_dir, "dataset": ""}
    with open(os.path.join(folder, "metrics.json"), "w") as fh:
        json.dump(metrics, fh)
    with open(os.path.join(folder, "samples.csv"), "w") as fh:
        fh.write("index,source,target,prediction,abs_error\n0,row 1,1.0,1.5,0.5\n1,row 2,2.0,2.0,0\n"
                 "2,row 3,3.0,2.0,1.0\n")
    return folder


# ---- what a user does in the EDIT tab ---------------------------------------------------------------
def palette_double_click(page, type_name: str) -> str:
    """Double-click a layer type in the palette; return the name of the layer it added."""
    tree = page.palette.tree
    item = page.palette.item(type_name)
    tree.scrollToItem(item)
    before = set(page.document.network.names())  # the network shown (issue 17: Main or another)
    point = tree.visualItemRect(item).center()
    QTest.mouseClick(tree.viewport(), Qt.LeftButton, Qt.NoModifier, point)  # a double-click starts with a click
    QTest.mouseDClick(tree.viewport(), Qt.LeftButton, Qt.NoModifier, point)
    added = [n for n in page.document.network.names() if n not in before]
    assert len(added) == 1, f"double-clicking {type_name} added {added}"
    return added[0]


def type_into(page, object_name: str, text: str) -> QLineEdit:
    """Replace the text of a property field and press Enter, as a user would."""
    edit = page.properties.findChild(QLineEdit, object_name)
    assert edit is not None, f"no field {object_name} in the property panel"
    edit.setFocus()
    edit.selectAll()
    QTest.keyClicks(edit, text)
    QTest.keyClick(edit, Qt.Key_Return)
    return edit


def scene_point(page, scene_pos) -> QPoint:
    page.view.ensureVisible(scene_pos.x() - 5, scene_pos.y() - 5, 10, 10, 20, 20)
    return page.view.mapFromScene(scene_pos)


def drag_connect(page, source: str, target: str, pin: int = 0) -> None:
    """Drag from ``source``'s output pin to ``target``'s input pin ``pin`` on the canvas."""
    page.flush()
    src = page.scene.node(source)
    dst = page.scene.node(target)
    start = scene_point(page, src.output_anchor())
    # a layer without input pins (an Input) has no anchor: the drop lands on its box (its top edge may round
    # to a pixel just outside it at a zoom below 100%)
    end_scene = dst.input_anchor(pin) if dst.in_ports else dst.mapToScene(dst.box_rect().center())
    end = page.view.mapFromScene(end_scene)
    if not page.view.viewport().rect().contains(end):
        page.view.fit()
        start, end = page.view.mapFromScene(src.output_anchor()), page.view.mapFromScene(end_scene)
    viewport = page.view.viewport()
    QTest.mousePress(viewport, Qt.LeftButton, Qt.NoModifier, start)
    QTest.mouseMove(viewport, (start + end) / 2)
    QTest.mouseMove(viewport, end)
    QTest.mouseRelease(viewport, Qt.LeftButton, Qt.NoModifier, end)
