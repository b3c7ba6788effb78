"""``nnconsole info``'s layer tables: one per network, each saying which optimizer trains it (issue 17).

A layer inside repeat blocks is marked with its repetitions (``x2``; nested blocks multiply: ``x6``): its
parameters and multiply-adds already count every repetition, and the mark says why. Networks besides Main
(a GAN's Generator...) get their own table after Main's, headed by the optimizers that train them.

"parameters" counts what training learns. A network that also stores values it does not learn (BatchNormalization's
running mean and variance, the binary layers' binarised copies Wb and scales alpha, which nnabla recomputes from W
on every forward pass) gets a "stored" column too: every value its nnabla file holds, the count nnabla's own loader
gives for the exported network.
"""
from __future__ import annotations

from typing import Dict, List

from nnconsole.engine.project.model import MAIN_NETWORK, Network, Project
from nnconsole.engine.network.repeat_blocks import enclosing_blocks, find_blocks, has_repeats
from nnconsole.engine.project.structure import all_networks, FIRST_OPTIMIZER
from nnconsole.engine.network.shapes import infer_network

HEADER = ("layer", "type", "output shape", "parameters", "multiply-adds")


def repetitions(network: Network) -> Dict[str, int]:
    """Layer name -> how many times it runs once its repeat blocks are unrolled (only layers inside blocks)."""

    if not has_repeats(network.layers):
        return {}
    blocks, _ = find_blocks(network.layers)
    out = {}
    for name, around in enclosing_blocks(blocks).items():
        times = 1
        for block in around:
            times *= max(int(block.times), 0)
        out[name] = times
    return out


def layer_table(project: Project, network: Network, name: str = MAIN_NETWORK) -> List[str]:
    """The lines of one network's table (a 'repeated' column when it has repeat blocks)."""

    info = infer_network(network, all_networks(project), name)  # Units use the other networks
    repeated = repetitions(network)
    stored = info.total_stored != info.total_params  # values kept but not learned: shown beside the learned ones
    header = HEADER[:4] + (("stored",) if stored else ()) + HEADER[4:] + (("repeated",) if repeated else ())
    rows = [header]
    for name in info.order:
        li = info.layers[name]
        shape = "x".join(str(d) for d in li.out_shape) if li.out_shape else "-"
        row = (name, li.type, shape, f"{li.n_params:,}") + ((f"{li.n_stored:,}",) if stored else ()) + (f"{li.macs:,}",)
        rows.append(row + ((f"x{repeated[name]}" if name in repeated else "",) if repeated else ()))
    rows.append(("total", "", "", f"{info.total_params:,}") + ((f"{info.total_stored:,}",) if stored else ())
                + (f"{info.total_macs:,}",) + (("",) if repeated else ()))
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    left = {0, 1, 2, len(header) - 1} if repeated else {0, 1, 2}  # names and marks left, numbers right
    lines = []
    for i, row in enumerate(rows):
        cells = [c.ljust(w) if j in left else c.rjust(w) for j, (c, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells).rstrip())
        if i == 0 or i == len(rows) - 2:
            lines.append("  ".join("-" * w for w in widths))
    return lines


def info_text(project: Project) -> str:
    """Main's table, then each other network's, each headed by the optimizers that train it when the project
    has several networks or optimizers (a one-network project prints its table alone, as before)."""

    if not project.networks and not project.optimizers:
        return "\n".join(layer_table(project, project.network))
    trained_by: Dict[str, List[str]] = {MAIN_NETWORK: [FIRST_OPTIMIZER]}
    for entry in project.optimizers:
        trained_by.setdefault(entry.network, []).append(entry.name)
    parts = []
    for name, network in all_networks(project).items():
        optimizers = trained_by.get(name)
        by = f"trained by optimizer {', '.join(optimizers)}" if optimizers else "trained by no optimizer"
        parts.append("\n".join([f"network {name} ({by}):"] + layer_table(project, network, name)))
    return "\n\n".join(parts)
