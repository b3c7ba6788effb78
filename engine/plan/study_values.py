"""The values a user gives a large-batch study, checked: worker counts, policies, warm-ups, tolerance, name.

One place for these rules, used by ``nnconsole study batch`` (its argparse types) and by the GUI's "Start
study..." dialog, which refuses a bad value before any process starts (the GUI may not import
``nnconsole.engine.study``). Each parser returns the value the study uses, or raises ``ValueError`` with a
one-line message naming the option and what to give instead.
"""
from __future__ import annotations

import math
import re
from typing import List

from nnconsole.engine.rundir.batch_study import POLICIES

MAX_WORKERS = 1024  # as the predictor's largest layout
MAX_WARMUP_EPOCHS = 1000.0


def parse_workers(text: str) -> List[int]:
    """``--workers 1,2,4,8``: distinct whole numbers from 1 to MAX_WORKERS, 1 among them, in rising order."""
    parts = [p.strip() for p in str(text).split(",")]
    if not parts or any(not p for p in parts):
        raise ValueError(f"--workers '{text}': give worker counts separated by commas, e.g. 1,2,4,8")
    try:
        values = [int(p) for p in parts]
    except ValueError:
        bad = next(p for p in parts if not p.lstrip("+").isdigit())
        raise ValueError(f"--workers '{text}': '{bad}' is not a whole number; give counts like 1,2,4,8") from None
    for v in values:
        if not 1 <= v <= MAX_WORKERS:
            raise ValueError(f"--workers '{text}': {v} workers is outside 1..{MAX_WORKERS}")
    if len(set(values)) != len(values):
        raise ValueError(f"--workers '{text}': a worker count is listed twice")
    if 1 not in values:
        raise ValueError(f"--workers '{text}': include 1, the one-worker baseline the tolerance is measured from "
                         f"(e.g. 1,{text})")
    return sorted(values)


def parse_policies(text: str) -> List[str]:
    """``--policy linear,none``: learning-rate scaling policies of ``multi_gpu.scaling``, each once."""
    values = [p.strip().lower() for p in str(text).split(",")]
    for v in values:
        if v not in POLICIES:
            raise ValueError(f"--policy '{text}': unknown policy '{v}'; choose from {', '.join(POLICIES)}")
    if len(set(values)) != len(values):
        raise ValueError(f"--policy '{text}': a policy is listed twice")
    return values


def parse_warmups(text: str) -> List[float]:
    """``--warmup 0,2``: warm-up lengths in epochs (``multi_gpu.warmup_epochs``), each once."""
    values = []
    for part in str(text).split(","):
        try:
            value = float(part)
        except ValueError:
            raise ValueError(f"--warmup '{text}': '{part.strip()}' is not a number of epochs; give e.g. 0,2") from None
        if not math.isfinite(value) or not 0 <= value <= MAX_WARMUP_EPOCHS:
            raise ValueError(f"--warmup '{text}': {part.strip()} epochs is outside 0..{MAX_WARMUP_EPOCHS:g}")
        values.append(value)
    if len(set(values)) != len(values):
        raise ValueError(f"--warmup '{text}': a warm-up is listed twice")
    return sorted(values)


def parse_tolerance(text: str) -> float:
    """``--tolerance 0.5``: points of error (0.5 = half a point), returned as a fraction (0.005)."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"--tolerance '{text}': give points of validation error, e.g. 0.5") from None
    if not math.isfinite(value) or not 0 <= value < 100:
        raise ValueError(f"--tolerance '{text}': points of error from 0 to under 100, e.g. 0.5")
    return value / 100.0


def parse_name(text: str) -> str:
    """``--study NAME``: the study's folder name under ``<results>/study``: letters, digits, '.', '_', '-'."""
    if not re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}", text):
        raise ValueError(f"--study '{text}': a name of letters, digits, '.', '_' and '-' (not starting with '.'), "
                         "at most 100 characters; it names the study's folder")
    return text
