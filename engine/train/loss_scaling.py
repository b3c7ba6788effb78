"""Dynamic loss scaling for half-precision training (nnabla's mixed-precision recipe).

In fp16 a gradient below 2**-24 is zero, and most of a network's gradients are small: without a
scale they vanish. The recipe of nnabla's ``DynamicLossScalingUpdater``
(nnabla/experimental/mixed_precision_training.py): backward from ``loss`` with ``grad = scale``,
check the (all-reduced) gradients for inf/NaN, and on overflow skip the update and divide the scale
by 2; otherwise divide the gradients by the scale before weight decay and the update, and multiply
the scale by 2 after ``GROWTH_INTERVAL`` good updates in a row. Unlike nnabla's updater, an
overflowed batch is skipped rather than recomputed (the data order and the schedule stay those of
a float run), and every rank takes the same decision: the overflow flag is reduced over ranks.
Scaling by powers of two is exact in binary floating point: unscaled gradients equal unscaled ones.
"""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence
from nnconsole.engine.errors import TrainingError

# PyTorch's GradScaler and NVIDIA's guide start high (2**16) and let overflows bring the scale down:
# each halving costs one skipped update. nnabla's updater starts at 8, which leaves small fp16
# gradients at zero for the thousands of updates it takes to grow. 2**15 keeps one factor of
# headroom below fp16's largest value (65504) for gradients of order 1.
INITIAL_LOSS_SCALE = 2.0 ** 15
SCALING_FACTOR = 2.0
GROWTH_INTERVAL = 2000  # nnabla's DynamicLossScalingUpdater default N
# Overflows in a row before the run stops: by then the scale has fallen by 2**64, so the gradients
# are not finite at any scale (the model itself diverged or the data holds inf/NaN).
MAX_CONSECUTIVE_OVERFLOWS = 64


class DynamicLossScaler:
    """The loss scale of one rank, kept equal on all ranks by agreeing on every overflow."""

    def __init__(self, scale: float = INITIAL_LOSS_SCALE, growth_interval: int = GROWTH_INTERVAL,
                 factor: float = SCALING_FACTOR) -> None:
        if not (scale > 0 and math.isfinite(scale)) or growth_interval < 1 or factor <= 1:
            raise ValueError(f"loss scaling needs scale > 0, growth_interval >= 1 and factor > 1; got {scale}, "
                             f"{growth_interval}, {factor}")
        self.scale = float(scale)
        self.growth_interval = int(growth_interval)
        self.factor = float(factor)
        self.good_updates = 0  # in a row since the last overflow or growth
        self.skipped = 0  # over the run
        self.overflows_in_a_row = 0

    def overflowed(self, solvers: Sequence[Any], comm: Any = None) -> bool:
        """True when any rank's gradients hold inf or NaN (one small reduction when several ranks run)."""
        local = any(bool(solver.check_inf_or_nan_grad()) for solver in solvers)
        if comm is not None and getattr(comm, "size", 1) > 1:
            return bool(comm.any(local))
        return local

    def unscale_or_skip(self, solvers: Sequence[Any], comm: Any = None, log: Optional[Any] = None,
                        iteration: int = 0) -> bool:
        """Prepare the reduced gradients for the update: True to update, False to skip it.

        On overflow (on any rank) the scale is divided by ``factor`` and the update must be skipped;
        otherwise the gradients are divided by the scale, and the scale grows after
        ``growth_interval`` good updates in a row.
        """
        if self.overflowed(solvers, comm):
            old = self.scale
            self.scale /= self.factor
            self.good_updates = 0
            self.skipped += 1
            self.overflows_in_a_row += 1
            if log is not None:
                log.info("half precision: gradients overflowed at iteration %d; update skipped, loss scale %g -> %g",
                         iteration, old, self.scale)
            if self.overflows_in_a_row >= MAX_CONSECUTIVE_OVERFLOWS:

                raise TrainingError(
                    f"the gradients were inf or NaN in {self.overflows_in_a_row} updates in a row (iteration "
                    f"{iteration}), down to a loss scale of {self.scale:g}: the model diverged or the data holds "
                    "inf/NaN. Check the data, lower optimizer.learning_rate, or set config.precision to 'float'.")
            return False
        self.overflows_in_a_row = 0
        inverse = 1.0 / self.scale
        for solver in solvers:
            solver.scale_grad(inverse)
        self.good_updates += 1
        if self.good_updates >= self.growth_interval:
            self.scale *= self.factor
            self.good_updates = 0
        return True
