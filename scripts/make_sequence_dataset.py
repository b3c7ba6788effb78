"""Generate the sine_rnn template's data: noisy sine-wave sequences and the next (clean) value of each.

A sequence dataset in NNC's matrix format, small enough to commit and generated deterministically from a
seed: each sample is a ``seq/NNNNN.csv`` matrix of 16 rows (time steps) x 1 column (the signal), a sine
wave of random amplitude (0.5-1), frequency (0.05-0.15 cycles per step) and phase plus Gaussian noise
(standard deviation 0.05); the target ``y`` is the noise-free value one step after the last row. The main
CSVs (``x:sequence,y``) name the matrix files relative to their folder.

Run from the repository root (numpy only):
    .venv/bin/python scripts/make_sequence_dataset.py [--out project_templates/sine_rnn/data]
The output folder's seq/ and CSVs are replaced; the same seed always gives byte-identical files.
"""
from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import Dict

import numpy as np

SEED = 20261125
STEPS = 16
TRAIN, VALIDATION = 400, 100
NOISE = 0.05
DEFAULT_OUT = Path(__file__).resolve().parent.parent / "project_templates" / "sine_rnn" / "data"


def _number(value: float) -> str:
    return f"{value:.4f}"


def generate(out: Path) -> Dict[str, int]:
    """Write seq/*.csv, train.csv and validation.csv under ``out``; returns the number of rows of each CSV."""
    out = Path(out)
    rng = np.random.default_rng(SEED)
    if (out / "seq").exists():
        shutil.rmtree(out / "seq")
    (out / "seq").mkdir(parents=True)
    rows = []
    for i in range(TRAIN + VALIDATION):
        amplitude = rng.uniform(0.5, 1.0)
        frequency = rng.uniform(0.05, 0.15)
        phase = rng.uniform(0.0, 2 * np.pi)
        t = np.arange(STEPS + 1)
        clean = amplitude * np.sin(2 * np.pi * frequency * t + phase)
        signal = clean[:STEPS] + rng.normal(0.0, NOISE, STEPS)
        name = f"seq/{i:05d}.csv"
        (out / name).write_text("".join(_number(v) + "\n" for v in signal), newline="\n")
        rows.append(f"{name},{_number(clean[STEPS])}")
    counts = {}
    for role, part in (("train", rows[:TRAIN]), ("validation", rows[TRAIN:])):
        (out / f"{role}.csv").write_text("x:sequence,y:next\n" + "".join(r + "\n" for r in part), newline="\n")
        counts[role] = len(part)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (default: the template's data/)")
    print(generate(parser.parse_args().out))


if __name__ == "__main__":
    main()
