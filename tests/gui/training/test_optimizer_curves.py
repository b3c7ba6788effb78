"""TRAINING curves of a project with several optimizers (issue 17): one loss curve per optimizer, named."""
from __future__ import annotations

import os

import numpy as np

from nnconsole.app.training.curves import OPTIMIZER_KEY, LearningCurves
from nnconsole.engine.rundir import store as runs
from tests.support.training import train_in_process
from tests.support.projects import gan_project
from nnconsole.engine.check.project_file import load_valid_project


def _legend(curves: LearningCurves, plot: str = "loss") -> list:
    return [label.text for _, label in curves.plots[plot].legend.items]


def test_each_optimizer_has_its_own_named_loss_curve(qtbot, tmp_path):
    run_dir, _ = train_in_process(load_valid_project(gan_project(str(tmp_path), epochs=3)), str(tmp_path / "r"))
    records = list(runs.iter_metrics(run_dir))
    curves = LearningCurves()
    qtbot.addWidget(curves)
    curves.resize(700, 600)
    curves.set_primary(run_dir, records[:3])  # live: the generator's curve appears with its first record
    curves.add_records(run_dir, records[3:])
    assert _legend(curves) == ["Optimizer training", "validation", "Optimizer_G training"]
    x, y = curves.curve(OPTIMIZER_KEY + "Optimizer_G").getData()
    mine = [r for r in records if r["type"] == "optimizer_loss"]
    assert list(x) == [r["epoch"] for r in mine] and np.allclose(y, [r["loss"] for r in mine])
    first = [r["loss"] for r in records if r["type"] == "train"]
    assert np.allclose(curves.curve("train_loss").getData()[1], first)  # the first optimizer's curve is unchanged
    assert curves.runs[os.path.abspath(run_dir)].optimizer_names() == ["Optimizer_G"]
    # the y range holds the larger of the two losses
    assert curves._y_top["loss"] >= max(max(first), float(np.max(y)))
    curves.show()
    qtbot.wait(50)
    curves.grab().save(os.path.join(str(tmp_path), "optimizer_curves.png"))
    if os.environ.get("NNCONSOLE_SCREENSHOT_DIR"):
        curves.grab().save(os.path.join(os.environ["NNCONSOLE_SCREENSHOT_DIR"], "optimizer_curves.png"))
    # overlaid as another run: its curves (the generator's too) go when the overlay goes
    curves.set_primary(None)
    curves.set_overlays({run_dir: records})
    assert any("Optimizer_G training" in text for text in _legend(curves))
    curves.set_overlays({})
    assert _legend(curves) == []
    # a CSV export says which optimizer each loss row belongs to
    curves.set_primary(run_dir, records)
    out = str(tmp_path / "curves.csv")
    assert curves.save_csv(out) == len([r for r in records if r["type"] in ("train", "validation", "optimizer_loss")])
    assert ",Optimizer_G," in open(out).read()
