"""Screenshots of the DATASET, CONFIG, TRAINING and EVALUATION tabs during and after a real digits run.

Copies the digits template to a temporary folder, trains a smaller variant on 1 worker, then the
template on 2 workers from the TRAINING tab (the screenshot of that tab is taken mid-run, with the
first run overlaid), evaluates the finished run from the EVALUATION tab, and saves
``docs/screenshots/{dataset,config,training,evaluation}_tab.png`` at 1400x900, offscreen.

    .venv/bin/python scripts/screenshot_tabs.py [--output docs/screenshots] [--epochs 30]
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QApplication, QTabWidget  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABS = ("dataset", "config", "training", "evaluation")


def wait_until(app: QApplication, condition, timeout: float, step: float = 0.02) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        app.processEvents()
        if condition():
            return True
        time.sleep(step)
    app.processEvents()
    return condition()


def settle(app: QApplication, seconds: float = 0.3) -> None:
    wait_until(app, lambda: False, seconds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=os.path.join(ROOT, "docs", "screenshots"))
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--keep", action="store_true", help="keep the temporary project folder")
    args = parser.parse_args()

    app = QApplication.instance() or QApplication(sys.argv)
    from nnconsole.app.config.commands import set_setting
    from nnconsole.app.document.project_document import ProjectDocument
    from nnconsole.engine.rundir import store as runs
    from nnconsole.engine.rundir.protocol import RunStatus
    from nnconsole.engine.project.templates import create_from_template

    work = tempfile.mkdtemp(prefix="nnconsole-shots-")
    project_dir = os.path.join(work, "digits")
    document = ProjectDocument()
    document.load(create_from_template("digits_cnn", project_dir))

    tabs = QTabWidget()
    pages = {}
    for name in TABS:
        module = __import__(f"nnconsole.app.{name}.page", fromlist=["create_page"])
        pages[name] = module.create_page(document, None)
        tabs.addTab(pages[name], name.upper())
    tabs.resize(1400, 900)
    tabs.show()
    training = pages["training"]
    finished = []
    training.controller.run_finished.connect(lambda *a: finished.append(a))
    training.controller.launch_failed.connect(lambda msg: finished.append(("", RunStatus.FAILED, msg)))

    # Run 1: a narrower network on 1 worker, so the trade-off graph has two costs to compare.
    conv1 = document.project.network.layer("conv1")
    document.set_layer_field("conv1", "params", dict(conv1.params, outmaps=8))
    set_setting(document, "config.max_epoch", max(4, args.epochs // 3))
    document.save()
    training.workers.setValue(1)
    training.start_run()
    if not wait_until(app, lambda: finished, 300) or finished[-1][1] != RunStatus.FINISHED:
        print(f"first run did not finish: {finished}", file=sys.stderr)
        return 1
    first_run = finished[-1][0]

    # Run 2: the template's network on 2 workers, shot mid-run with run 1 overlaid.
    document.set_layer_field("conv1", "params", dict(conv1.params, outmaps=16))
    set_setting(document, "config.max_epoch", args.epochs)
    set_setting(document, "multi_gpu.workers", 2)
    document.save()
    tabs.setCurrentWidget(training)
    training.workers.setValue(2)
    finished.clear()
    training.start_run()
    wait_until(app, lambda: training.live_run is not None, 60)
    training.history.set_checked(first_run, True)
    wait_until(app, lambda: training.progress.bar.value() >= 650 or finished, 300)
    settle(app, 0.2)
    os.makedirs(args.output, exist_ok=True)
    shots = {}
    shots["training"] = tabs.grab()
    if not wait_until(app, lambda: finished, 300) or finished[-1][1] != RunStatus.FINISHED:
        print(f"second run did not finish: {finished}", file=sys.stderr)
        return 1
    second_run = finished[-1][0]

    evaluation = pages["evaluation"]
    tabs.setCurrentWidget(evaluation)
    evaluation.refresh_runs()
    evaluation.select_run(second_run)
    loaded = []
    evaluation.evaluation_loaded.connect(loaded.append)
    evaluation.evaluation_failed.connect(loaded.append)
    evaluation.evaluate()
    if not wait_until(app, lambda: loaded, 120) or not evaluation.metrics:
        print(f"evaluation failed: {evaluation.error.text()}", file=sys.stderr)
        return 1
    evaluation.mistakes_only.setChecked(True)
    evaluation.table.sortByColumn(5, Qt.DescendingOrder)  # most confident mistakes first
    settle(app)
    shots["evaluation"] = tabs.grab()

    tabs.setCurrentWidget(pages["dataset"])
    pages["dataset"].wait_for_checks()
    settle(app, 0.5)
    shots["dataset"] = tabs.grab()
    # CONFIG with an exponential LR decay whose interval is not a multiple of N: the plan corrects the
    # multiplier and warns (an unsaved edit, as a user would make it).
    set_setting(document, "optimizer.lr_multiplier", 0.5)
    set_setting(document, "optimizer.lr_update_interval", 345)
    tabs.setCurrentWidget(pages["config"])
    settle(app)
    shots["config"] = tabs.grab()

    for name, pixmap in shots.items():
        path = os.path.join(args.output, f"{name}_tab.png")
        pixmap.save(path)
        print(f"wrote {path} ({pixmap.width()}x{pixmap.height()})")
    print(f"runs: {first_run} and {second_run} ({len(runs.list_runs(runs.results_root(document.path)))} in history)")
    training.shutdown()
    if args.keep:
        print(f"project kept in {project_dir}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
