"""The run's progress strip: bar, epoch, elapsed time, ETA, samples/s and the all-reduce share.

Figures come from the latest ``train`` record (the worker computes elapsed, ETA and throughput);
the strip formats them and flags communication-bound runs (all-reduce share above 30%). It shows one run, the
one the TRAINING tab shows (``run_dir``): the live run as its records arrive, or an ended run as its files
left it (``show_ended``); an ended run has no ETA.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QWidget

from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.protocol import format_duration
from nnconsole.engine.rundir.protocol import COMM_WARN_SHARE  # the share above which the engine warns, too
from nnconsole.engine.rundir.protocol import DATASET_CACHE, TRAIN, RunStatus


class RunProgress(QWidget):
    """A progress bar with the run's live figures next to it."""

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("run_progress_strip")
        self.bar = QProgressBar(self)
        self.bar.setObjectName("run_progress")
        self.bar.setRange(0, 1000)
        self.bar.setFormat("idle")
        self.bar.setTextVisible(True)
        self.labels: Dict[str, QLabel] = {}
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.bar, 3)
        for key, tip in (("epoch", "epoch in progress"), ("elapsed", "training time so far"),
                         ("eta", "estimated time to the end"), ("throughput", "training samples per second, "
                                                                "all workers together"),
                         ("allreduce", "share of each iteration spent in the gradient all-reduce")):
            label = QLabel(self)
            label.setObjectName(f"run_{key}")
            label.setToolTip(tip)
            layout.addWidget(label)
            self.labels[key] = label
        self.last: Dict[str, Any] = {}
        self.run_dir: Optional[str] = None  # whose figures are shown (None: none)
        self.reset()

    def reset(self, text: str = "idle", run_dir: Optional[str] = None) -> None:
        """Empty figures with ``text`` in the bar, for ``run_dir`` (None: no run)."""
        self.run_dir = run_dir
        self.last = {}
        self.bar.setValue(0)
        self.bar.setFormat(text)
        self._show({})

    def update_from(self, records: List[Dict[str, Any]]) -> None:
        """Take the newest train record among ``records`` (before training, the dataset cache build's progress)."""
        train = [r for r in records if r.get("type") == TRAIN]
        if not train:
            building = [r for r in records if r.get("type") == DATASET_CACHE]
            if building and not self.last:
                self._show_cache_build(building[-1])
            return
        self.last = train[-1]
        total = self.last.get("total_iterations") or 0
        done = self.last.get("iteration", 0)
        if total:
            self.bar.setValue(int(1000 * min(done / total, 1.0)))
            self.bar.setFormat(f"iteration {done:,} / {total:,}  (%p%)")
        self._show(self.last)

    def _show_cache_build(self, r: Dict[str, Any]) -> None:
        """'building dataset cache 40% ETA 12 s' in the bar while the workers decode the dataset."""
        total = max(int(r.get("total") or 0), 1)
        fraction = min(int(r.get("done") or 0) / total, 1.0)
        eta = r.get("eta")
        self.bar.setValue(int(1000 * fraction))
        self.bar.setFormat(f"building {r.get('dataset', '')} dataset cache {fraction:.0%}"
                           + (f" ETA {eta:.0f} s" if eta is not None else ""))

    def finish(self, status: RunStatus, iteration: Optional[int] = None) -> None:
        """The run ended: ``iteration`` is where, as the run's status.json records it (the last record
        shown here may be a few iterations before the real end), or None when it records none."""
        total = self.last.get("total_iterations") or 0
        if status == RunStatus.FINISHED:
            self.bar.setValue(1000)
        elif total and iteration:
            self.bar.setValue(int(1000 * min(iteration / total, 1.0)))
        self.bar.setFormat(str(status) + (f" at iteration {iteration:,}" if iteration else "")
                           + (f" / {total:,}" if total and iteration and status != RunStatus.FINISHED else ""))
        self.labels["eta"].setText("ETA -")  # nothing is left to wait for

    def show_ended(self, run_dir: str, status: RunStatus, records: List[Dict[str, Any]],
                   iteration: Optional[int] = None) -> None:
        """A run that is not being followed, as its files left it: its last train record's figures, where it
        ended (``iteration`` from status.json), no ETA. A run still going elsewhere shows 'running'."""
        self.reset(str(status), run_dir)
        train = [r for r in records if r.get("type") == TRAIN]
        if train:
            self.last = train[-1]
            self._show(self.last)
        if status == RunStatus.RUNNING:
            self.update_from(train)
            self.bar.setFormat(f"running (not followed here): {self.bar.format()}")
            return
        self.finish(status, iteration or self.last.get("iteration"))

    def _show(self, r: Dict[str, Any]) -> None:
        epoch = r.get("epoch")
        planned = runs.planned_epochs(r)
        self.labels["epoch"].setText(f"epoch {epoch:.2f}" + (f" / {planned}" if planned else "")
                                     if epoch is not None else "epoch -")
        self.labels["elapsed"].setText(f"elapsed {format_duration(r.get('elapsed'))}")
        self.labels["eta"].setText(f"ETA {format_duration(r.get('eta'))}")
        sps = r.get("samples_per_s")
        self.labels["throughput"].setText(f"{sps:,.0f} samples/s" if sps else "- samples/s")
        share = r.get("allreduce_share")
        label = self.labels["allreduce"]
        label.setText(f"all-reduce {share:.0%}" if share is not None else "all-reduce -")
        label.setStyleSheet("QLabel { color: #b05a00; font-weight: bold; }"
                            if share is not None and share > COMM_WARN_SHARE else "")
