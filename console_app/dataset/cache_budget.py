"""The DATASET tab's cache disk budget (``datasets.cache_budget``, issue 31): its editor, why a value is refused,
and what the decoded images of the loaded datasets take against the budget.

The need is known without decoding or another pass over the CSV: the tab's background load (``load_dataset``)
already gives each image variable's distinct files and sample shape, and the cache holds one uint8 sample per
distinct file (what ``dataset_entry.pixel_bytes`` counts when it builds the entry). The budget is
``dataset_entry.pixel_budget``: the value in GB, or with 0, 80% of the free space of the CSV's folder, where its
cache goes. The engine holds each dataset's cache against the budget on its own, and so does this line.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from PySide6.QtWidgets import QHBoxLayout, QLabel, QVBoxLayout, QWidget

from nnconsole.app.config.fields import FieldEditor, spec_for
from nnconsole.engine.data.dataset_entry import BUDGET_SHARE, pixel_budget
from nnconsole.engine.project.schema import setting

BUDGET = "datasets.cache_budget"
PROBLEM_STYLE = "QLabel { color: #c00000; }"
OVER_STYLE = "QLabel { color: #a05a00; }"


@dataclass(frozen=True)
class CacheNeed:
    """What one loaded dataset's decoded images take in the cache: uint8 bytes over its distinct image files."""

    pixel_bytes: int
    files: int


def cache_need(dataset: Any) -> Optional[CacheNeed]:
    """The cache's pixel bytes for a loaded ``Dataset`` (one sample per distinct file of each image variable);
    None when it has no image variable (its cache holds no pixels)."""
    total = files = 0
    for source in dataset.images.values():  # arrays, OnDemandImages or BuildingImages: each has the cache's shape
        count = int(source.shape[0])
        sample = 1
        for size in source.shape[1:]:
            sample *= int(size)
        total += count * sample
        files += count
    return CacheNeed(total, files) if dataset.images else None


def size_text(n: float) -> str:
    """Bytes in decimal units, as the budget counts them (1 GB = 1e9 bytes): '92.2 kB', '193 GB'."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            value = n / scale
            return f"{value:.3g} {unit}" if value < 1000 else f"{value:,.0f} {unit}"
    return f"{int(n)} bytes"


def budget_bytes(csv_path: str, budget_gb: float) -> int:
    """The budget in bytes for the dataset at ``csv_path``: its cache goes beside it (``pixel_budget``)."""
    return pixel_budget(Path(csv_path).parent, budget_gb)


def _limits(paths: Dict[str, str], budget_gb: float) -> Dict[str, int]:
    """Each dataset's budget in bytes, the free space read once per disk (two reads would differ by what was
    written between them, and the line would show two budgets for one disk)."""
    by_disk: Dict[Any, int] = {}
    limits = {}
    for split, path in paths.items():
        folder = Path(path).parent
        try:
            disk: Any = os.stat(folder).st_dev
        except OSError:
            disk = str(folder)
        if disk not in by_disk:
            by_disk[disk] = budget_bytes(path, budget_gb)
        limits[split] = by_disk[disk]
    return limits


def budget_summary(needs: Dict[str, Optional[CacheNeed]], paths: Dict[str, str], budget_gb: float,
                   cache: bool) -> Tuple[str, bool]:
    """One line saying each loaded dataset's decoded size against the budget and what that means for the run, and
    whether any dataset is over it."""
    if not cache:
        return "The cache is off: images are decoded into memory at every start.", False
    loaded = {split: need for split, need in needs.items() if need is not None}
    if not loaded:
        return "No image dataset loaded yet.", False
    limits = _limits({split: paths[split] for split in loaded}, budget_gb)
    fits = {split: need.pixel_bytes <= limits[split] for split, need in loaded.items()}
    sizes = ", ".join(f"{split} {need.files:,} images {size_text(need.pixel_bytes)}" for split, need in loaded.items())

    def budget(limit: int) -> str:
        free = "" if budget_gb > 0 else f" ({BUDGET_SHARE:.0%} of {size_text(limit / BUDGET_SHARE)} free)"
        return size_text(limit) + free
    if len(set(limits.values())) == 1:
        against = "budget " + budget(next(iter(limits.values())))
    else:  # beside CSVs on different disks: each its own free space
        against = "budgets " + ", ".join(f"{split} {budget(limit)}" for split, limit in limits.items())
    if all(fits.values()):
        verdict = ("both fit" if len(fits) > 1 else "fits") + ": cached"
    elif not any(fits.values()):
        verdict = "over: only the index is cached, images decoded per batch"
    else:
        verdict = ", ".join(f"{split} {'fits (cached)' if ok else 'over (decoded per batch)'}"
                            for split, ok in fits.items())
    return f"Decoded: {sizes}; {against}: {verdict}.", not all(fits.values())


class CacheBudgetBox(QWidget):
    """The budget's editor (the schema's label, tooltip and bounds; undoable like the other settings), its unit and
    what 0 means, a red line saying why typed text is refused, and the need-against-budget line."""

    def __init__(self, document: Any, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setObjectName("dataset_cache_budget")
        self.document = document
        self.setting = setting(BUDGET)
        self.editor = FieldEditor(document, spec_for(self.setting))
        field = self.editor.widget
        field.setFixedWidth(100)
        field.setPlaceholderText("0")
        self.label = QLabel(self.setting.label.replace(f" ({self.setting.unit})", "") + ":")
        self.label.setBuddy(field)
        self.label.setToolTip(self.setting.doc)
        self.unit = QLabel(f"{self.setting.unit} (0 = automatic: {BUDGET_SHARE:.0%} of the free space)")
        self.unit.setToolTip(self.setting.doc)
        self.problem = QLabel("")
        self.problem.setObjectName("dataset_cache_budget_problem")
        self.problem.setStyleSheet(PROBLEM_STYLE)
        self.problem.setWordWrap(True)
        self.problem.hide()
        self.need = QLabel("")
        self.need.setObjectName("dataset_cache_budget_need")
        self.need.setWordWrap(True)
        self.need.setToolTip("What the cache takes for the datasets loaded here: one uint8 sample per distinct image "
                             "file. Each dataset's cache is held against the budget on its own when it is built; a "
                             "cache built before keeps its images until its CSV or image files change.")
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        for widget in (self.label, field, self.unit):
            row.addWidget(widget)
        row.addSpacing(16)
        row.addWidget(self.need, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addLayout(row)
        layout.addWidget(self.problem)
        self._refused: Optional[str] = None  # the text last refused, said again once the field shows the kept value
        field.textEdited.connect(self._typed)
        field.editingFinished.connect(self._left)  # after the editor's own: it has put the kept value back
        self.needs: Dict[str, Optional[CacheNeed]] = {}
        self.paths: Dict[str, str] = {}
        self.sync()

    def _typed(self, _text: str) -> None:
        problem = self.editor.problem()
        self._refused = self.editor.widget.text().strip() if problem else None
        self._say(f"{self.setting.label}: {problem}; {self.setting.fix}." if problem else "")

    def _left(self) -> None:
        if self._refused is not None and not self.editor.problem():  # the field shows the document's value again
            kept = self.editor.widget.text()
            self._say(f"{self.setting.label}: {self._refused!r} was not taken (use a number "
                      f"{self.setting.allowed()}; {self.setting.fix}); it stays {kept}.")
            self._refused = None

    def _say(self, text: str) -> None:
        self.problem.setText(text)
        self.problem.setVisible(bool(text))

    def sync(self) -> None:
        """Show the document's value, enabled only with the cache on, and the need line anew."""
        self.editor.sync()
        cache = bool(self.document.project.datasets.cache)
        for widget in (self.label, self.editor.widget, self.unit):
            widget.setEnabled(cache)
        if not self.editor.problem():
            self._say("")
        self.show_needs(self.needs, self.paths)

    def show_needs(self, needs: Dict[str, Optional[CacheNeed]], paths: Dict[str, str]) -> None:
        """The loaded datasets' needs (split -> need; None: no images or not loaded) against the current budget."""
        self.needs, self.paths = dict(needs), dict(paths)
        ds = self.document.project.datasets
        text, over = budget_summary(self.needs, self.paths, float(ds.cache_budget), bool(ds.cache))
        self.need.setText(text)
        self.need.setStyleSheet(OVER_STYLE if over else "")
