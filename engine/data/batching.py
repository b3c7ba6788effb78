"""Sample order and batches: the epoch's permutation (the same on every worker) and each rank's share."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import numpy as np


def epoch_order(size: int, seed: int, epoch: int, shuffle: bool = True) -> np.ndarray:
    """The sample order of one epoch: a permutation seeded by (seed, epoch), the same on every worker.

    Without ``shuffle`` it is ``arange(size)``.
    """
    if size < 0:
        raise ValueError(f"dataset size must be >= 0, got {size}")
    if not shuffle:
        return np.arange(size, dtype=np.int64)
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(seed) & 0xFFFFFFFF, int(epoch)])))
    return rng.permutation(size).astype(np.int64)


def _check_rank(batch_size: int, rank: int, world_size: int) -> None:
    if batch_size < 1:
        raise ValueError(f"batch size must be >= 1, got {batch_size}")
    if world_size < 1:
        raise ValueError(f"world size must be >= 1, got {world_size}")
    if not 0 <= rank < world_size:
        raise ValueError(f"rank must be in [0, {world_size}), got {rank}")


def worker_batches(order: np.ndarray, batch_size: int, rank: int, world_size: int) -> List[np.ndarray]:
    """This worker's index arrays, one per iteration, for an epoch whose sample order is ``order``.

    Iteration i covers the global slice [i*B*N, (i+1)*B*N) of the order and worker r takes its r-th
    block of B. There are ceil(size / (B*N)) iterations; the last global batch is completed by
    wrapping around to the start of the order, so every batch is full. Hence across workers every
    sample is seen at least once per epoch, and exactly once when size is divisible by B*N.
    """
    _check_rank(batch_size, rank, world_size)
    order = np.asarray(order, dtype=np.int64)
    size = len(order)
    if size == 0:
        return []
    step = batch_size * world_size
    iterations = -(-size // step)
    extended = np.resize(order, iterations * step)  # np.resize repeats cyclically: the wrap-around
    return [extended[i * step + rank * batch_size: i * step + (rank + 1) * batch_size].copy()
            for i in range(iterations)]


def validation_batches(size: int, batch_size: int, rank: int, world_size: int) -> List[Tuple[np.ndarray, int]]:
    """This worker's validation batches as (indices, valid_rows), for exact metrics across workers.

    Worker r gets a disjoint contiguous share of [0, size) (shares differ in length by at most one).
    Each batch is padded to ``batch_size`` by repeating an index; only the first ``valid_rows`` rows
    count. Every worker gets the same number of batches (some may have 0 valid rows) so collective
    calls stay in step, and the valid rows summed over workers equal ``size`` exactly.
    """
    _check_rank(batch_size, rank, world_size)
    if size <= 0:
        return []
    base, extra = divmod(size, world_size)
    start = rank * base + min(rank, extra)
    count = base + (1 if rank < extra else 0)
    share = np.arange(start, start + count, dtype=np.int64)
    longest = base + (1 if extra else 0)
    n_batches = -(-longest // batch_size)
    pad_index = int(share[-1]) if count else 0
    out: List[Tuple[np.ndarray, int]] = []
    for b in range(n_batches):
        chunk = share[b * batch_size:(b + 1) * batch_size]
        valid = len(chunk)
        if valid < batch_size:
            chunk = np.concatenate([chunk, np.full(batch_size - valid, pad_index, dtype=np.int64)])
        out.append((chunk, valid))
    return out


def sample_coverage(comm: Any, size: int, indices: List[np.ndarray]) -> Optional[Dict[str, int]]:
    """How often each training sample was used this epoch, over all ranks (min and max); collective.

    The counts are summed as int32 (``comm.sum_counts``): 4 bytes a row, exact, where a float64 sum moved 8."""
    if not indices:
        return None
    counts = np.bincount(np.concatenate(indices), minlength=size).astype(np.int32)
    total = comm.sum_counts(counts)
    return {"samples_min_count": int(total.min()), "samples_max_count": int(total.max())}


def first_needed_order(size: int, seed: int, shuffle: bool, epoch: int = 0, position: int = 0,
                       batch: int = 0) -> np.ndarray:
    """The rows in the order a run starting at ``epoch``, ``position`` samples into that epoch's order, first needs
    them (``position``: a resumed run's ``samples_into_epoch``; 0, 0 for a new run): the rest of that epoch's
    order, as the training loop draws it (iteration k takes [k*B*N, (k+1)*B*N) of it), then, when it starts mid-
    epoch, the epoch's first ``batch`` rows (its last iteration completes itself from the order's start with fewer
    than B*N rows; ``batch``: the run's batch size, B*N or more unless the plan rounds it up) and the next epoch's
    order, where the rows it skipped are first needed. Rows repeat; ``first_use_order`` keeps each file's first
    use. A run resumed with another worker count starts at the iteration holding ``position``: the fewer than B*N
    rows of it before ``position`` come later here."""
    order = epoch_order(size, seed, epoch, shuffle)
    if position <= 0:
        return order
    return np.concatenate([order[position:], order[:batch], epoch_order(size, seed, epoch + 1, shuffle)])
