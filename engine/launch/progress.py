"""Terminal progress for ``nnconsole train``: a live bar with ETA on a TTY, plain lines otherwise."""
from __future__ import annotations

import sys
import time
from typing import Any, Dict, Optional, TextIO

from nnconsole.engine.rundir.protocol import DATASET_CACHE, TRAIN, VALIDATION, WARNING, format_duration

class ProgressPrinter:
    """Receives metrics records (``protocol.MetricsRecord``, as the launcher tails them) and draws progress."""

    def __init__(self, stream: TextIO = sys.stderr, live: Optional[bool] = None, width: int = 28):
        self.stream = stream
        self.live = stream.isatty() if live is None else live
        self.width = width
        self.last_train: Dict[str, Any] = {}
        self.last_valid: Dict[str, Any] = {}
        self._drawn = 0.0
        self._cache_tenth: Dict[Any, int] = {}

    def __call__(self, record: Dict[str, Any]) -> None:
        kind = record.get("type")
        if kind == TRAIN:
            self.last_train = record
            if self.live and time.monotonic() - self._drawn > 0.1:
                self._draw()
        elif kind == VALIDATION:
            self.last_valid = record
            self._line(f"epoch {record['epoch']}: validation loss {record['loss']:.4f}  error {record['error']:.4f}"
                       f"{'  (best)' if record.get('best') else ''}  elapsed {format_duration(record.get('elapsed'))}"
                       f"  ETA {format_duration(self.last_train.get('eta'))}")
        elif kind == WARNING:
            self._line(f"warning: {record.get('message')}")
        elif kind == DATASET_CACHE:
            self._cache(record)

    def _cache(self, r: Dict[str, Any]) -> None:
        """A dataset cache build: live on a TTY; else a line at its start, every 10% and its end."""
        total = max(int(r.get("total") or 0), 1)
        fraction = min(int(r.get("done") or 0) / total, 1.0)
        text = (f"building the {r.get('dataset')} dataset cache {fraction:4.0%} ({r.get('done'):,}/{total:,} images)"
                f" ETA {format_duration(r.get('eta'))}")
        tenth = int(fraction * 10)
        if self.live and fraction < 1.0:
            self.stream.write(f"\r{text}\x1b[K")
            self.stream.flush()
        elif fraction >= 1.0 or self._cache_tenth.get(r.get("dataset")) != tenth:
            self._line(text)
        self._cache_tenth[r.get("dataset")] = tenth

    def _bar(self, fraction: float) -> str:
        filled = int(round(fraction * self.width))
        return "#" * filled + "." * (self.width - filled)

    def _draw(self) -> None:
        r = self.last_train
        total = max(r.get("total_iterations") or 1, 1)
        fraction = min(r["iteration"] / total, 1.0)
        text = (f"\r[{self._bar(fraction)}] {fraction:5.1%} it {r['iteration']}/{total} ep {r['epoch']:.2f} "
                f"loss {r['loss']:.4f} err {r['error']:.4f} lr {r['lr']:.3g} {r['samples_per_s']:.0f} samples/s "
                f"elapsed {format_duration(r['elapsed'])} ETA {format_duration(r['eta'])}")
        self.stream.write(text + "\x1b[K")
        self.stream.flush()
        self._drawn = time.monotonic()

    def _line(self, text: str) -> None:
        if self.live:
            self.stream.write("\r\x1b[K")
        self.stream.write(text + "\n")
        self.stream.flush()
        if self.live and self.last_train:
            self._draw()

    def close(self) -> None:
        if self.live:
            self.stream.write("\n")
            self.stream.flush()
