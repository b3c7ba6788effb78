"""NNC's repeat blocks: RepeatStart and RepeatEnd (palette category LoopControl).

A project keeps a repeat block as NNC shows it: the layers between a RepeatStart and the RepeatEnd that
closes it run ``times`` times in a row, each repetition with its own weights. Shape inference checks the
block as one repetition (``nnconsole.engine.network.repeat_blocks.check_blocks`` pairs the two, checks that the
block keeps its shape and counts parameters once per repetition) and the engine unrolls it before building
or exporting (``repeat_blocks.unroll``), so on their own both are the identity.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping

from nnconsole.engine.layers.nnc_values import to_text
from nnconsole.engine.layers.registry import LayerSpec, ParamSpec, Shape, register


def _identity(ctx: Any, inputs: list, layer: Any) -> Any:  # pragma: no cover - blocks are unrolled before build
    import nnabla.functions as F  # deferred: nnabla stays out of the GUI
    return F.identity(inputs[0])


def _same(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    return tuple(ins[0])


def _start_id(name: str, props: Dict[str, str], params: Dict[str, Any], unsupported: List[str]) -> List[str]:
    """NNC computes a RepeatStart's ID (its own name); blocks pair through the graph (repeat_blocks)."""
    return ["ID"]


def _end_id(name: str, props: Dict[str, str], params: Dict[str, Any], unsupported: List[str]) -> List[str]:
    """NNC computes a RepeatEnd's ID (the RepeatStart it closes) and Times (that RepeatStart's); blocks pair
    through the graph (repeat_blocks), so neither is needed."""
    return ["ID", "Times"]


register(LayerSpec(
    type="RepeatStart", group="LoopControl",
    doc="Opens a repeat block: the layers up to the RepeatEnd that closes it run times times in a row, each "
        "repetition with its own weights, the output of one feeding the next (a ResNet's stacked blocks).",
    params=[ParamSpec("times", "int", 3, "How many times the block runs (NNC's Times): a number, or the name of an "
                                         "Argument of the network ('n' or '*n'), which a Unit running it may set.",
                      min=1)],
    n_inputs=(1, 1), output_shape=_same, build=_identity, loop_control=True,
    nnc_properties={"Times": "times"}, from_sdcproj=_start_id,
    to_sdcproj=lambda p: {"Times": to_text(p.get("times", 3)), "ID": "*Name"},  # as NNC saves them (or 'n')
    caption=lambda p: f"x{p.get('times', 3)}",
))

register(LayerSpec(
    type="RepeatEnd", group="LoopControl",
    doc="Closes the repeat block of the RepeatStart met walking back along its input; its output is the last "
        "repetition's.",
    params=[], n_inputs=(1, 1), output_shape=_same, build=_identity, loop_control=True,
    from_sdcproj=_end_id, to_sdcproj=lambda p: {"ID": "*RepeatStart", "Times": "*RepeatTimes"},
    caption=lambda p: "",
))
