"""The project document as plain dataclasses: network, datasets, CONFIG and multi-GPU settings.

Everything here is Qt-free and nnabla-free so that the CLI, the GUI and the tests share one model.
Reading and writing YAML lives in ``io.py``; checking values lives in ``validate.py``.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

FORMAT_VERSION = 3

SOLVERS = ("Sgd", "Momentum", "Nesterov", "Adam", "AdamW", "Adagrad", "RMSprop", "AdaBound", "Lars")
# Solvers whose learning-rate argument nnabla calls ``alpha`` (Adam family).
ALPHA_SOLVERS = ("Adam", "AdamW", "AdaBound")
SCHEDULES = ("exponential", "step", "cosine", "polynomial", "constant")
SCALING_POLICIES = ("linear", "keep-logical-batch", "sqrt", "none")
PRECISIONS = ("float", "half")
DEVICES = ("auto", "cpu", "cuda")
INITIALIZERS = (
    "NormalAffineGlorot", "NormalConvolutionGlorot", "NormalAffineHe", "NormalConvolutionHe",
    "UniformAffineGlorot", "UniformConvolutionGlorot", "Normal", "Uniform", "Constant",
)


@dataclass
class Initializer:
    """How a parameter is initialised, NNC style: a type, a multiplier, and a value for Constant."""

    type: str = "NormalAffineGlorot"
    multiplier: float = 1.0
    value: float = 0.0  # Constant only


@dataclass
class Layer:
    """One node of the network: a unique name, a registry type, parameters and named inputs.

    ``inputs`` lists the names of the layers feeding this one, in pin order.
    ``initializers`` and ``lr_multipliers`` are keyed by parameter name (``W``, ``b``, ``gamma`` ...).
    ``position`` is the EDIT canvas position (x, y); the engine ignores it.
    """

    name: str
    type: str
    inputs: List[str] = field(default_factory=list)
    params: Dict[str, Any] = field(default_factory=dict)
    initializers: Dict[str, Initializer] = field(default_factory=dict)
    lr_multipliers: Dict[str, float] = field(default_factory=dict)
    position: Optional[Tuple[float, float]] = None


@dataclass
class Network:
    """The training network as a DAG; validation and runtime networks are derived from it."""

    layers: List[Layer] = field(default_factory=list)

    def layer(self, name: str) -> Layer:
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise KeyError(name)

    def names(self) -> List[str]:
        return [layer.name for layer in self.layers]

    def consumers(self, name: str) -> List[Layer]:
        return [layer for layer in self.layers if name in layer.inputs]


@dataclass
class Datasets:
    """Training and validation CSV paths, relative to the project file, in NNC's dataset format."""

    training: str = ""
    validation: str = ""
    shuffle: bool = True
    cache: bool = True
    normalize: bool = True  # divide image pixels by 255, as NNC does by default


@dataclass
class Schedule:
    """Learning-rate schedule. ``exponential`` is NNC's: lr *= lr_multiplier every lr_update_interval.

    ``step``: multiply by ``gamma`` at each iteration in ``steps``; ``cosine``/``polynomial``: decay
    over ``max_iter`` iterations (0 = whole run) with ``power`` for polynomial.
    All iteration counts are single-worker iterations; the plan divides them by N.
    """

    type: str = "exponential"
    steps: List[int] = field(default_factory=list)
    gamma: float = 0.1
    max_iter: int = 0
    power: float = 1.0


@dataclass
class Optimizer:
    """The CONFIG tab's Optimizer: solver, learning rate (Alpha for Adam family) and schedule."""

    solver: str = "Adam"
    solver_params: Dict[str, float] = field(default_factory=dict)
    learning_rate: float = 0.001
    weight_decay: float = 0.0
    lr_multiplier: float = 1.0
    lr_update_interval: int = 0  # 0 = never multiply
    schedule: Schedule = field(default_factory=Schedule)
    warmup_iterations: int = 0
    update_interval: int = 1  # gradient accumulation: updates every U iterations


@dataclass
class TrainingConfig:
    """The CONFIG tab's Global Config. ``validation_interval`` is NNC's and nnabla's Monitor Interval
    (epochs between validations; the last epoch is always validated); ``log_interval`` is nnconsole's
    own interval between training records, in iterations."""

    max_epoch: int = 10
    batch_size: int = 64  # per worker
    precision: str = "float"
    log_interval: int = 10  # iterations between training records (loss, error, speed) on the learning curve
    validation_interval: int = 1  # epochs between validations: NNC's and nnabla's "Monitor Interval"
    save_best: bool = True
    seed: int = 0
    device: str = "auto"
    initial_parameters: str = ""  # .h5 of starting weights, relative to the project file ("" = initializers)


@dataclass
class MultiGPU:
    """How many workers (GPUs or CPU processes) and how the plan rescales batch and LR for them."""

    workers: int = 1
    scaling: str = "linear"
    warmup_epochs: float = 0.0
    hosts: List[str] = field(default_factory=list)
    hostfile: str = ""
    launcher: str = "auto"  # auto | mpiexec | srun
    mpiexec_args: List[str] = field(default_factory=list)
    bucket_mb: float = 0.0  # CPU all-reduce bucket size; 0 = engine default


@dataclass
class Project:
    """A whole saved project: one YAML file with ``format_version`` at the root."""

    name: str = "untitled"
    description: str = ""
    network: Network = field(default_factory=Network)
    datasets: Datasets = field(default_factory=Datasets)
    config: TrainingConfig = field(default_factory=TrainingConfig)
    optimizer: Optimizer = field(default_factory=Optimizer)
    multi_gpu: MultiGPU = field(default_factory=MultiGPU)
    format_version: int = FORMAT_VERSION
    # Where the project was loaded from (not saved); dataset paths are relative to its folder.
    path: Optional[str] = field(default=None, compare=False, repr=False)

    def copy(self) -> "Project":
        return copy.deepcopy(self)
