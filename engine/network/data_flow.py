"""Where the data flows: which networks' Inputs each dataset feeds (issue 26, item 6).

As in NNC, each network has its own variables: an Input of one network and an Input of another may read the
same dataset variable (CSV column) with different shapes, e.g. ``y`` as a label ``[1]`` in a classifier and as a
``[1, 12, 12]`` map in another network. What must hold is only that a dataset column fits every Input it actually
feeds. A split feeds:

- ``training``: the Main network (the first optimizer) and every other optimizer whose dataset is ``training``;
- ``validation``: the Main network (validation after each epoch, NNC's ``valid_error`` monitor) and every other
  optimizer whose dataset is ``validation``.

A network no optimizer trains reads no dataset while training (an executor's network reads the data given to
``nnconsole evaluate``, checked there), and an Input whose value a generator gives (``reads_dataset``) reads none.
Within one split, the Inputs reading one variable must agree on its shape up to axes of size 1 (the batch is
reshaped for each network: ``[1]`` and ``[1, 1]`` fit one column, ``[1]`` and ``[1, 12, 12]`` do not).
Pure Python: what the checks, the dataset loader and the exporter all read.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from nnconsole.engine.layers.types.inputs import input_variable, reads_dataset
from nnconsole.engine.network.noise_buffers import project_buffers
from nnconsole.engine.network.shapes import NetworkInfo, infer_network
from nnconsole.engine.project.model import MAIN_NETWORK, Project
from nnconsole.engine.project.structure import FIRST_OPTIMIZER, all_networks

SPLITS = ("training", "validation")
Shape = Tuple[int, ...]


@dataclass(frozen=True)
class Reader:
    """One network reading one dataset variable from one split: which network, why (the optimizer or the
    validation that runs it) and the shape its Inputs give the variable."""

    network: str
    by: str  # "optimizer 'Optimizer'" or "validation"
    shape: Shape


def split_feeds(project: Project, split: str) -> List[Tuple[str, str]]:
    """(network, why) for each network that ``split`` feeds, Main first, each network once per reason."""
    if split not in SPLITS:
        raise ValueError(f"unknown dataset split {split!r}; expected one of {', '.join(SPLITS)}")
    feeds = [(MAIN_NETWORK, f"optimizer '{FIRST_OPTIMIZER}'" if split == "training" else "validation")]
    networks = all_networks(project)
    for entry in project.optimizers:
        if entry.dataset == split and entry.network in networks:
            feeds.append((entry.network, f"optimizer '{entry.name}'"))
    return feeds


def fed_variables(project: Project, name: str, info: Optional[NetworkInfo] = None) -> Dict[str, Shape]:
    """The dataset variables network ``name``'s Inputs read, with their shapes (generated Inputs left out)."""
    networks = all_networks(project)
    network = networks[name]
    info = info or infer_network(network, networks, name)  # Units use the other networks
    generated = {input_variable(layer, layer.params) for layer in network.layers
                 if layer.type == "Input" and not reads_dataset(layer.params)}
    generated |= project_buffers(project)  # Inputs reading a VATNoise buffer read no dataset column
    return {var: tuple(shape) for var, shape in info.input_variables.items() if var not in generated}


def split_readers(project: Project, split: str) -> Dict[str, List[Reader]]:
    """Dataset variable -> every network ``split`` feeds it to, in ``split_feeds`` order."""
    readers: Dict[str, List[Reader]] = {}
    inferred: Dict[str, Dict[str, Shape]] = {}
    for name, by in split_feeds(project, split):
        if name not in inferred:
            inferred[name] = fed_variables(project, name)
        for var, shape in inferred[name].items():
            readers.setdefault(var, []).append(Reader(name, by, shape))
    return readers


def fits(a: Shape, b: Shape) -> bool:
    """Whether one sample of shape ``a`` can feed an Input of shape ``b``: the same values in the same order,
    axes of size 1 apart (``[1]`` and ``[1, 1]``; never ``[1]`` and ``[12]``, nor ``[3, 4]`` and ``[4, 3]``)."""
    return tuple(d for d in a if d != 1) == tuple(d for d in b if d != 1)


def conflicts(readers: Dict[str, List[Reader]]) -> Dict[str, List[Reader]]:
    """The variables whose readers do not all fit the first one's shape, with every reader."""
    return {var: found for var, found in readers.items() if any(not fits(found[0].shape, r.shape) for r in found)}


def dataset_variables(project: Project, split: Optional[str] = None) -> Dict[str, Shape]:
    """The dataset variables ``split`` feeds, each with the shape of its first reader (the shape the column is
    loaded in; every other reader fits it or ``conflicts`` names them). Without ``split``: those of both splits
    (training's shape first), e.g. the columns an exported file lists."""
    shapes: Dict[str, Shape] = {}
    for which in ([split] if split else SPLITS):
        for var, found in split_readers(project, which).items():
            shapes.setdefault(var, found[0].shape)
    return shapes
