"""TRAINING tab: while the workers build the dataset cache, the progress bar says so (issue 18)."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.gui


def test_progress_bar_shows_the_dataset_cache_build_until_training_starts(qtbot, tmp_path):
    from nnconsole.app.training.progress import RunProgress

    progress = RunProgress()
    qtbot.addWidget(progress)
    progress.resize(900, 30)
    progress.update_from([{"type": "dataset_cache", "dataset": "training", "done": 0, "total": 500, "eta": None},
                          {"type": "dataset_cache", "dataset": "training", "done": 200, "total": 500, "eta": 12.2}])
    assert progress.bar.format() == "building training dataset cache 40% ETA 12 s"
    assert progress.bar.value() == 400
    progress.grab().save(str(tmp_path / "cache_progress.png"))
    progress.update_from([{"type": "train", "epoch": 0.5, "iteration": 12, "total_iterations": 72}])
    assert progress.bar.format().startswith("iteration 12 / 72")
    # a later cache record (the validation set, already cached) never replaces the training figures
    progress.update_from([{"type": "dataset_cache", "dataset": "validation", "done": 5, "total": 5, "eta": 0.0}])
    assert progress.bar.format().startswith("iteration 12 / 72")
