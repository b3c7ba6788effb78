"""Generated inputs: values an Input layer gets from a generator instead of a dataset column (issue 26).

NNC lets an Input (and a loss's target, ``T.Generator``) be filled by a generator: its ``Generator`` property
names the kind and ``GeneratorMultiplier`` its one parameter, and nnabla's loader turns the .nntxt's
``generator_variable { type multiplier }`` into the same (``nnabla.utils.load._get_generator``):

- ``Normal``: normal values, mean 0, standard deviation ``multiplier`` (a GAN's noise ``z``);
- ``Uniform``: uniform values in [-multiplier, multiplier];
- ``Constant``: every value is ``multiplier`` (a GAN's real/fake targets 1 and 0);
- ``Range``: 0, m, 2m, ... along the last axis of each sample (nnabla's RangeInitializer).

nnabla_cli draws from numpy's global generator, so its runs differ from process to process. nnconsole draws
each sample's values from its own generator keyed by (run seed, stream, sample slot), where the stream names
the network, the variable, the phase and the epoch, and the slot is the sample's position in the epoch's
logical batches (training) or its row in the set (validation, evaluation, inference). A worker fills only its
rows but gets the values a single worker would get for them, so N workers equal 1 worker exactly (the
briefing's N-worker rule), and a resumed run draws what the uninterrupted run drew.
"""
from __future__ import annotations

import zlib
from typing import Sequence, Tuple

import numpy as np

from nnconsole.engine.layers.types.inputs import GENERATORS

RANDOM_GENERATORS = ("Normal", "Uniform")
# What each random sample stream is drawn for (a part of its key).
PHASES = {"train": 0, "validation": 1, "evaluation": 2, "inference": 3}


def stream_key(seed: int, network: str, variable: str, phase: str, epoch: int = 0) -> Tuple[int, ...]:
    """The key of one generated variable's values in one phase and epoch (the slot completes it)."""
    if phase not in PHASES:
        raise ValueError(f"phase must be one of {', '.join(PHASES)}, got {phase!r}")
    return (int(seed) & 0xFFFFFFFF, zlib.crc32(f"{network}/{variable}".encode("utf-8")), PHASES[phase], int(epoch))


def generate(kind: str, multiplier: float, shape: Sequence[int], key: Sequence[int], slots: Sequence[int]
             ) -> np.ndarray:
    """float32 values of shape (len(slots), *shape): each row from the generator keyed by ``key`` and its slot.

    Rows depend only on (key, slot), never on which worker or batch asks for them.
    """
    shape = tuple(int(s) for s in shape)
    slots = np.asarray(slots, dtype=np.int64).reshape(-1)
    out = np.empty((len(slots),) + shape, dtype=np.float32)
    m = float(multiplier)
    if kind == "Constant":
        out.fill(m)
    elif kind == "Range":
        last = shape[-1] if shape else 1
        out[...] = (np.arange(last, dtype=np.float64) * m).astype(np.float32)
    elif kind in RANDOM_GENERATORS:
        # Philox is counter-based: the stream's key, and the slot in the counter's third word, give each row a
        # disjoint sequence that costs no seeding (a SeedSequence per row costs 5x more).
        philox_key = np.random.SeedSequence([int(k) & 0xFFFFFFFF for k in key]).generate_state(2, np.uint64)
        for i, slot in enumerate(slots):
            rng = np.random.Generator(np.random.Philox(counter=[0, 0, int(slot), 0], key=philox_key))
            if kind == "Normal":
                out[i] = rng.standard_normal(shape) * m
            else:
                out[i] = rng.uniform(-m, m, shape)
    else:
        raise ValueError(f"generator must be one of {', '.join(GENERATORS[1:])}, got {kind!r}")
    return out


def training_slots(epoch_iteration: int, batch_size: int, rank: int, world_size: int) -> np.ndarray:
    """The slots of worker ``rank``'s rows in iteration ``epoch_iteration`` of an epoch (as ``worker_batches``
    lays samples out: worker r takes the r-th block of B of the iteration's B x N)."""
    start = (int(epoch_iteration) * world_size + rank) * batch_size
    return np.arange(start, start + batch_size, dtype=np.int64)
