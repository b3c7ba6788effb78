"""Filling a built graph's generated variables (NNC's Generator inputs) before a forward pass.

The values come from ``nnconsole.engine.data.generated``: each row keyed by the run's seed, a stream name (which
optimizer or phase draws them), the variable, the epoch and the row's slot, so every worker and every resumed
run draws what one uninterrupted worker draws for the same rows.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence, Tuple

from nnconsole.engine.data.generated import generate, stream_key
from nnconsole.engine.network.shapes import GeneratedInput


def optimizer_stream(index: int) -> str:
    """The stream name of the ``index``-th optimizer's training draws (0: the CONFIG tab's): two optimizers
    draw independent values, as nnabla_cli's optimizers each call their generators."""
    return f"optimizer{int(index)}"


def fill_generated(generated: Mapping[str, Tuple[Any, GeneratedInput]], seed: int, stream: str, phase: str,
                   epoch: int, slots: Sequence[int]) -> None:
    """Write every generated variable's values for the rows ``slots`` (one slot per row of the batch)."""
    for name, (var, spec) in generated.items():
        var.d = generate(spec.generator, spec.multiplier, spec.shape, stream_key(seed, stream, name, phase, epoch),
                         slots)
