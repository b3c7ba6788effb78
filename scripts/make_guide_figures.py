"""Make the multi-GPU guide's comparison figure with the product itself.

Trains the digits template three times through the CLI (1 worker; 2 workers with linear LR
scaling; 2 workers without scaling), overlays the runs in the TRAINING tab's curve view and saves
docs/figures/one_vs_two_workers.png plus a table of the final figures (printed, for the guide).

Usage: .venv/bin/python scripts/make_guide_figures.py [--epochs 20]
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def train(project: str, *args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "nnconsole.engine.cli.main", "train", project, "-q", *args], capture_output=True,
                         text=True, check=True, cwd=ROOT)
    return next(line.split(": ", 1)[1] for line in out.stdout.splitlines() if line.startswith("run directory: "))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--output", default=os.path.join(ROOT, "docs", "figures", "one_vs_two_workers.png"))
    args = parser.parse_args()

    from nnconsole.engine.rundir import store as runs
    from nnconsole.engine.project.templates import create_from_template

    work = tempfile.mkdtemp(prefix="nnconsole-guide-")
    try:
        project = create_from_template("digits_cnn", os.path.join(work, "digits"))
        folder = os.path.dirname(project)
        epochs = ["--epochs", str(args.epochs)]
        one = train(project, *epochs)
        linear = train(project, "--gpus", "2", *epochs)
        text = open(project).read().replace("scaling: linear", "scaling: none")
        unscaled_project = os.path.join(folder, "project_unscaled.yaml")
        open(unscaled_project, "w").write(text)
        unscaled = train(unscaled_project, "--gpus", "2", *epochs)

        print("| run | workers | logical batch | learning rate | best val. error | wall time (s) |")
        print("|---|---|---|---|---|---|")
        for label, run_dir in (("1 worker", one), ("2 workers, linear LR scaling", linear),
                               ("2 workers, no scaling", unscaled)):
            plan = runs.read_plan(run_dir)
            status = runs.read_status(run_dir)
            elapsed = list(runs.iter_metrics(run_dir, "validation"))[-1]["elapsed"]
            print(f"| {label} | {plan.workers} | {plan.logical_batch} | {plan.effective_lr:g} | "
                  f"{status.best_validation_error:.4f} | {elapsed:.1f} |")

        from PySide6.QtWidgets import QApplication

        from nnconsole.app.training.curves import LearningCurves
        from nnconsole.app.training.page import read_all_metrics

        app = QApplication.instance() or QApplication([])
        widget = LearningCurves()
        widget.resize(1000, 760)
        widget.set_primary(one, read_all_metrics(one))
        widget.set_overlays({d: read_all_metrics(d) for d in (linear, unscaled)})
        widget.flush()
        widget.show()
        app.processEvents()
        os.makedirs(os.path.dirname(args.output), exist_ok=True)
        widget.save_png(args.output)
        widget.close()
        print(f"figure: {args.output}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
