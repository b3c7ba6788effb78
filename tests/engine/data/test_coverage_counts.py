"""The epoch's coverage check sums integer counts (issue 31): int32, 4 bytes a row, where float64 moved 8."""
from __future__ import annotations

import numpy as np

from nnconsole.engine.comm.cpu import SingleComm
from nnconsole.engine.data.batching import epoch_order, sample_coverage, worker_batches


class _TwoRanks(SingleComm):
    """A communicator whose other rank used the other half of the batches; records what was summed."""

    def __init__(self, other: np.ndarray) -> None:
        super().__init__()
        self.other = other
        self.summed = []

    def sum_counts(self, values: np.ndarray) -> np.ndarray:
        self.summed.append(values)
        return np.asarray(values) + np.bincount(self.other, minlength=len(values))


def test_coverage_sums_int32_counts_per_row_and_finds_every_row_once():
    order = epoch_order(64, seed=1, epoch=0)
    mine, theirs = worker_batches(order, 8, 0, 2), worker_batches(order, 8, 1, 2)
    comm = _TwoRanks(np.concatenate(theirs))
    assert sample_coverage(comm, 64, mine) == {"samples_min_count": 1, "samples_max_count": 1}
    (summed,) = comm.summed
    assert summed.dtype == np.int32 and summed.shape == (64,)


def test_the_one_process_communicator_sums_counts_as_int32():
    counts = SingleComm().sum_counts(np.array([0, 2, 1], dtype=np.int64))
    assert counts.dtype == np.int32 and counts.tolist() == [0, 2, 1]
