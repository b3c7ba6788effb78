"""Synchronized BatchNormalization: batch statistics over every worker's samples, not each worker's own.

With N workers and a per-worker batch B (keep-logical-batch on many workers), plain BatchNormalization
normalises each worker's B samples with their own mean and variance: noisy statistics at small B, and
training that differs from one worker with N x B samples. This layer sums the per-channel moments over
all ranks (one all-reduce of C floats for the mean, one for the variance, and the same two in backward),
so N workers x B samples normalise, learn and track running statistics as one worker with N x B does.

nnabla's ``F.sync_batch_normalization`` does this only through nnabla's own (NCCL) communicator, which
CPU runs do not have. This one is built from nnabla functions (gradients by nnabla's autograd) plus two
small Python functions: a sum over the ranks through the engine's communicator, and the update of the
running mean and unbiased variance exactly as nnabla's BatchNormalization makes it. Only the per-channel
sums leave the device, so it works with any context.

The layer uses the communicator registered with ``across_workers`` while a training graph is built;
without one (a single worker, validation, evaluation, export) it is nnabla's BatchNormalization, except
for layers that keep several axes while training, whose running statistics nnabla 1.39 never updates.
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

import numpy as np
from nnabla.function import PythonFunction

_REGISTERED: List[Any] = []


@contextlib.contextmanager
def across_workers(comm: Any) -> Iterator[None]:
    """Build graphs whose synchronized BatchNormalization layers reduce through ``comm``."""
    _REGISTERED.append(comm)
    try:
        yield
    finally:
        _REGISTERED.pop()


def registered_workers() -> Optional[Any]:
    """The communicator of the graph being built, when it has more than one rank."""
    comm = _REGISTERED[-1] if _REGISTERED else None
    return comm if comm is not None and getattr(comm, "size", 1) > 1 else None


def on_this_worker(values: np.ndarray) -> np.ndarray:
    """The 'sum over ranks' of a single worker: the values themselves."""
    return values


class _GlobalMean(PythonFunction):
    """y = (sum over ranks of x) / count; backward: dx = (sum over ranks of dy) / count.

    The backward sum gives each rank the gradient of every rank's loss through its own samples, which
    the trainer's gradient all-reduce then averages like any other gradient.
    """

    def __init__(self, ctx: Any, reduce_sum: Callable[[np.ndarray], np.ndarray], count: int) -> None:
        super().__init__(ctx)
        self.reduce_sum = reduce_sum
        self.count = float(count)

    @property
    def name(self) -> str:
        return "SyncBNGlobalMean"

    def min_outputs(self) -> int:
        return 1

    def setup_impl(self, inputs, outputs) -> None:
        outputs[0].reset_shape(inputs[0].shape, True)

    def forward_impl(self, inputs, outputs) -> None:
        outputs[0].d = self.reduce_sum(np.asarray(inputs[0].d, dtype=np.float32)) / np.float32(self.count)

    def backward_impl(self, inputs, outputs, propagate_down, accum) -> None:
        if not propagate_down[0]:
            return
        grad = self.reduce_sum(np.asarray(outputs[0].g, dtype=np.float32)) / np.float32(self.count)
        if accum[0]:
            inputs[0].g += grad
        else:
            inputs[0].g = grad

    def grad_depends_output_data(self, i, o) -> bool:
        return False

    def grad_depends_input_data(self, i, j) -> bool:
        return False


class _TrackRunningStatistics(PythonFunction):
    """Passes the batch variance through and, on the way, updates the running mean and variance.

    Inputs: (batch variance, batch mean); output: the batch variance unchanged. Running statistics
    follow nnabla's BatchNormalization: r = decay r + (1 - decay) s, with the variance made unbiased
    by count / (count - 1), count being the samples over all ranks.
    """

    def __init__(self, ctx: Any, mean: Any, var: Any, decay_rate: float, count: int) -> None:
        super().__init__(ctx)
        self.mean, self.var = mean, var
        self.decay = float(decay_rate)
        self.unbias = count / (count - 1.0) if count > 1 else 1.0

    @property
    def name(self) -> str:
        return "SyncBNRunningStatistics"

    def min_outputs(self) -> int:
        return 1

    def setup_impl(self, inputs, outputs) -> None:
        outputs[0].reset_shape(inputs[0].shape, True)

    def forward_impl(self, inputs, outputs) -> None:
        variance = np.asarray(inputs[0].d, dtype=np.float32)
        mean = np.asarray(inputs[1].d, dtype=np.float32)
        outputs[0].d = variance
        d = np.float32(self.decay)
        self.mean.d = d * self.mean.d + (np.float32(1) - d) * mean
        self.var.d = d * self.var.d + (np.float32(1) - d) * variance * np.float32(self.unbias)

    def backward_impl(self, inputs, outputs, propagate_down, accum) -> None:
        if propagate_down[0]:
            if accum[0]:
                inputs[0].g += outputs[0].g
            else:
                inputs[0].g = outputs[0].g
        if propagate_down[1] and not accum[1]:  # the output does not depend on the mean: a zero gradient
            inputs[1].grad.zero()

    def grad_depends_output_data(self, i, o) -> bool:
        return False

    def grad_depends_input_data(self, i, j) -> bool:
        return False


def sync_batch_normalization(x: Any, axes: Sequence[int], decay_rate: float, eps: float,
                             reduce_sum: Callable[[np.ndarray], np.ndarray], workers: int,
                             param_init: Optional[Dict[str, Any]] = None) -> Any:
    """Training-mode BatchNormalization of ``x`` with statistics over ``workers`` ranks' batches.

    ``axes`` are the kept axes (with the batch axis counted, as in ``PF.batch_normalization``);
    ``reduce_sum`` sums a float32 array over the ranks. Parameters are created under ``bn/`` with
    nnabla's names, shapes, order and defaults, so the validation graph, checkpoints and exported
    models see an ordinary BatchNormalization layer.
    """
    import nnabla as nn  # deferred: nnabla stays out of the GUI
    import nnabla.functions as F  # deferred: nnabla stays out of the GUI
    from nnabla.initializer import ConstantInitializer  # deferred: nnabla stays out of the GUI
    from nnabla.parameter import get_parameter_or_create  # deferred: nnabla stays out of the GUI

    init = dict(param_init or {})
    kept = [int(a) for a in axes]
    shape_stat = [x.shape[i] if i in kept else 1 for i in range(len(x.shape))]
    reduce_axes = tuple(i for i in range(len(x.shape)) if i not in kept)
    count = int(np.prod([x.shape[i] for i in reduce_axes])) * int(workers)
    with nn.parameter_scope("bn"):
        beta = get_parameter_or_create("beta", shape_stat, init.get("beta", ConstantInitializer(0)), True, True)
        gamma = get_parameter_or_create("gamma", shape_stat, init.get("gamma", ConstantInitializer(1)), True, True)
        running_mean = get_parameter_or_create("mean", shape_stat, init.get("mean", ConstantInitializer(0)), False)
        running_var = get_parameter_or_create("var", shape_stat, init.get("var", ConstantInitializer(1)), False)
    ctx = nn.get_current_context()
    mean = _GlobalMean(ctx, reduce_sum, count)(F.sum(x, axis=reduce_axes, keepdims=True))
    centred = x - mean
    variance = _GlobalMean(ctx, reduce_sum, count)(F.sum(centred * centred, axis=reduce_axes, keepdims=True))
    variance = _TrackRunningStatistics(ctx, running_mean, running_var, decay_rate, count)(variance, mean)
    return centred * (gamma * F.pow_scalar(variance + eps, -0.5)) + beta
