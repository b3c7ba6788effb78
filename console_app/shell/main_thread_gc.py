"""Python's cyclic garbage collector runs on the GUI thread only.

The collector runs in whichever thread happens to allocate when a threshold is crossed. When that is
one of the console's worker threads (``dataset.background.BackgroundCall``: the check before Run, a
dataset preview), it may destroy unreachable Qt wrappers there: ``QObject::~QObject`` then waits for
a Qt lock the GUI thread holds while the GUI thread waits for the GIL, and the application freezes for
good (seen: a pytest-qt run hung in ``_parse_records`` -> ``gc_collect_main`` -> ``QObject::~QObject``).

``MainThreadCollector`` turns automatic collection off and collects, generation by generation as
Python would, from a timer on the GUI thread. ``suspended()`` gives the same for a bounded stretch
(the GUI tests), restoring automatic collection afterwards.
"""
from __future__ import annotations

import contextlib
import gc
from typing import Iterator, Optional

from PySide6.QtCore import QObject, QTimer

CHECK_INTERVAL_MS = 500


class MainThreadCollector(QObject):
    """Disable automatic gc; run the generations whose thresholds were crossed every ``interval_ms``."""

    def __init__(self, parent: Optional[QObject] = None, interval_ms: int = CHECK_INTERVAL_MS) -> None:
        super().__init__(parent)
        self.threshold = gc.get_threshold()
        self.was_enabled = gc.isenabled()
        gc.disable()
        self.timer = QTimer(self)
        self.timer.timeout.connect(self.check)
        self.timer.start(interval_ms)

    def check(self) -> int:
        """Collect as Python's own thresholds would have; returns the number of unreachable objects found."""
        count0, count1, count2 = gc.get_count()
        found = 0
        if count0 > self.threshold[0]:
            found += gc.collect(0)
            if count1 > self.threshold[1]:
                found += gc.collect(1)
                if count2 > self.threshold[2]:
                    found += gc.collect(2)
        return found

    def stop(self) -> None:
        """Back to automatic collection (after a full collection here, on the GUI thread)."""
        self.timer.stop()
        gc.collect()
        if self.was_enabled:
            gc.enable()


def install(app: QObject) -> MainThreadCollector:
    """For the application's whole life (parented to ``app``)."""
    return MainThreadCollector(app)


@contextlib.contextmanager
def suspended(parent: Optional[QObject] = None) -> Iterator[MainThreadCollector]:
    """Main-thread-only collection for the ``with`` block (a test), then automatic collection again."""
    collector = MainThreadCollector(parent)
    try:
        yield collector
    finally:
        collector.stop()
        collector.deleteLater()
