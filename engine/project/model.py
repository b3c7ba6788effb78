"""The project document as plain dataclasses: network, datasets, CONFIG and multi-GPU settings.

Everything here is Qt-free and nnabla-free so that the CLI, the GUI and the tests share one model.
Reading and writing YAML lives in ``io.py``; checking values lives in ``validate.py``. The settings'
defaults, bounds, labels and file names are declared once in ``schema.py``; the fields below take their
defaults from it (``default_of``).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from nnconsole.engine.project.schema import default_of

FORMAT_VERSION = 3
# NNC's 11 initializers (its HeForward variants spelled as nnabla's loader also names them, ...He);
# the formulas are in engine/layers/initializers.py.
INITIALIZERS = (
    "NormalAffineGlorot", "NormalConvolutionGlorot", "NormalAffineHe", "NormalConvolutionHe",
    "NormalAffineHeBackward", "NormalConvolutionHeBackward",
    "UniformAffineGlorot", "UniformConvolutionGlorot", "Normal", "Uniform", "Constant",
)


@dataclass
class Initializer:
    """How a parameter is initialised, NNC style: a type, a multiplier, and a value for Constant."""

    type: str = "NormalAffineGlorot"
    multiplier: float = 1.0
    value: float = 0.0  # Constant only


@dataclass
class SearchRange:
    """How ``nnconsole search`` varies one layer property marked searched (NNC's Search flag, the EDIT panel's
    Search checkbox): ``kind`` ``int`` (``low``..``high``, ``step`` apart), ``float``, ``log_float`` or ``choice``
    (one of ``choices``), as a ``search.params`` entry's. Keyed by property in ``Layer.search``."""

    kind: str = "int"
    low: float = 0.0
    high: float = 0.0
    step: int = 1
    choices: List[Any] = field(default_factory=list)

    def as_param(self, target: str) -> "SearchParam":
        """The ``search.params`` entry this range is equivalent to, for ``target``."""
        return SearchParam(target=target, kind=self.kind, low=self.low, high=self.high, step=self.step,
                           choices=list(self.choices))


@dataclass
class Layer:
    """One node of the network: a unique name, a registry type, parameters and named inputs.

    ``inputs`` lists the names of the layers feeding this one, in pin order.
    ``initializers`` and ``lr_multipliers`` are keyed by parameter name (``W``, ``b``, ``gamma`` ...).
    ``position`` is the EDIT canvas position (x, y); the engine ignores it.
    ``parameter_scope`` (NNC's ParameterScope) names where the layer's weights live; empty means the
    layer's name. Layers naming one scope share one set of weights (a GAN's discriminator applied to real
    and to generated images).
    ``search`` marks properties (``params`` keys) that ``nnconsole search`` varies, with their ranges, as if the
    ``search`` section listed them (NNC's per-property Search flag; an Argument's Search is its ``value``).
    """

    name: str
    type: str
    inputs: List[str] = field(default_factory=list)
    params: Dict[str, Any] = field(default_factory=dict)
    initializers: Dict[str, Initializer] = field(default_factory=dict)
    lr_multipliers: Dict[str, float] = field(default_factory=dict)
    position: Optional[Tuple[float, float]] = None
    parameter_scope: str = ""
    search: Dict[str, SearchRange] = field(default_factory=dict)


@dataclass
class Comment:
    """A note on the EDIT canvas (NNC's Comment layer): text at a position. It computes nothing, so it is kept
    beside the layers, never in the graph."""

    text: str = ""
    position: Optional[Tuple[float, float]] = None


@dataclass
class Network:
    """The training network as a DAG; validation and runtime networks are derived from it. ``comments`` are
    the canvas notes (NNC's Comment), kept through saves and .sdcproj round trips."""

    layers: List[Layer] = field(default_factory=list)
    comments: List[Comment] = field(default_factory=list)

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

    training: str = default_of("datasets.training")
    validation: str = default_of("datasets.validation")
    shuffle: bool = default_of("datasets.shuffle")
    cache: bool = default_of("datasets.cache")
    cache_budget: float = default_of("datasets.cache_budget")
    normalize: bool = default_of("datasets.normalize")


@dataclass
class Schedule:
    """Learning-rate schedule. ``exponential`` is NNC's: lr *= lr_multiplier every lr_update_interval.

    ``step``: multiply by ``gamma`` at each iteration in ``steps``; ``cosine``/``polynomial``: decay
    over ``max_iter`` iterations (0 = whole run) with ``power`` for polynomial.
    All iteration counts are single-worker iterations; the plan divides them by N.
    """

    type: str = default_of("optimizer.schedule.type")
    steps: List[int] = default_of("optimizer.schedule.steps")
    gamma: float = default_of("optimizer.schedule.gamma")
    max_iter: int = default_of("optimizer.schedule.max_iter")
    power: float = default_of("optimizer.schedule.power")


@dataclass
class Optimizer:
    """The CONFIG tab's Optimizer: solver, learning rate (Alpha for Adam family) and schedule.

    ``lr_update_interval`` and ``warmup_iterations`` (the warm-up's length, a name kept from the days it
    counted iterations only) count what their ``*_unit`` says: single-worker iterations or epochs, as NNC
    lets the user choose; the plan turns both into iterations of the run.
    """

    solver: str = default_of("optimizer.solver")
    solver_params: Dict[str, float] = default_of("optimizer.solver_params")
    learning_rate: float = default_of("optimizer.learning_rate")
    weight_decay: float = default_of("optimizer.weight_decay")
    lr_multiplier: float = default_of("optimizer.lr_multiplier")
    lr_update_interval: int = default_of("optimizer.lr_update_interval")
    lr_update_interval_unit: str = default_of("optimizer.lr_update_interval_unit")  # "iterations" or "epochs"
    schedule: Schedule = field(default_factory=Schedule)
    warmup_iterations: int = default_of("optimizer.warmup_iterations")  # the warm-up length, in warmup_unit
    warmup_unit: str = default_of("optimizer.warmup_unit")
    update_interval: int = default_of("optimizer.update_interval")


@dataclass
class TrainingConfig:
    """The CONFIG tab's Global Config. ``validation_interval`` is NNC's and nnabla's Monitor Interval
    (epochs between validations; the last epoch is always validated); ``log_interval`` is nnconsole's
    own interval between training records, in iterations."""

    max_epoch: int = default_of("config.max_epoch")
    batch_size: int = default_of("config.batch_size")
    precision: str = default_of("config.precision")
    log_interval: int = default_of("config.log_interval")
    validation_interval: int = default_of("config.validation_interval")
    save_best: bool = default_of("config.save_best")
    seed: int = default_of("config.seed")
    device: str = default_of("config.device")
    initial_parameters: str = default_of("config.initial_parameters")


@dataclass
class MultiGPU:
    """How many workers (GPUs or CPU processes) and how the plan rescales batch and LR for them."""

    workers: int = default_of("multi_gpu.workers")
    simulate_workers: int = default_of("multi_gpu.simulate_workers")  # N > 1: one process trains as N workers
    scaling: str = default_of("multi_gpu.scaling")
    warmup_epochs: float = default_of("multi_gpu.warmup_epochs")
    hosts: List[str] = default_of("multi_gpu.hosts")
    hostfile: str = default_of("multi_gpu.hostfile")
    launcher: str = default_of("multi_gpu.launcher")
    mpiexec_args: List[str] = default_of("multi_gpu.mpiexec_args")
    bucket_mb: float = default_of("multi_gpu.bucket_mb")
    allreduce_precision: str = default_of("multi_gpu.allreduce_precision")
    allreduce_overlap: bool = default_of("multi_gpu.allreduce_overlap")
    link: str = default_of("multi_gpu.link")


MAIN_NETWORK = "Main"  # NNC's name of the training network (project.network)
DATASET_SPLITS = ("training", "validation")


@dataclass
class ExtraOptimizer:
    """One more optimizer besides the CONFIG tab's (NNC's and nnabla's Optimizer list after the first).

    Each iteration, when ``start_iteration <= iteration + 1 <= end_iteration`` (0 = no bound; single-worker
    iterations, as nnabla's start_iter/end_iter), it feeds its ``network`` (``Main`` or a key of
    ``Project.networks``) a batch of its ``dataset`` split, back-propagates that network's losses and updates
    the learned parameters of that network whose learning-rate multiplier is not 0 (a GAN's generator
    optimizer sets the discriminator's to 0 in its network), with its own solver and schedule.
    """

    name: str = "Optimizer2"
    network: str = MAIN_NETWORK
    dataset: str = "training"
    start_iteration: int = 0
    end_iteration: int = 0
    optimizer: Optimizer = field(default_factory=Optimizer)


REPEAT_EVALUATION_TYPES = ("mean", "last", "std")  # nnabla's: average, last pass, standard deviation


@dataclass
class Executor:
    """NNC's and nnabla's Executor: how evaluation runs a network (the runtime form of ``network``).

    ``num_evaluations`` passes over each batch are combined by ``repeat_evaluation_type``: ``mean`` (Monte-Carlo
    averaging, e.g. with a Dropout whose skip_at_test is off), ``last`` or ``std`` (the spread, an uncertainty).
    Without executors, evaluation runs Main's runtime network once.
    """

    name: str = "Executor"
    network: str = MAIN_NETWORK
    num_evaluations: int = 1
    repeat_evaluation_type: str = "mean"


@dataclass
class SearchParam:
    """One searched value of a ``search`` section: ``target`` names it, ``kind`` says how it is sampled.

    ``target`` is a setting's dotted path (``optimizer.learning_rate``, ``config.batch_size``,
    ``optimizer.solver``) or a layer property of the Main network as ``layers.<layer>.<param>``
    (``layers.fc1.out_shape``; a Repeat block's ``layers.<RepeatStart>.times``), or of another network as
    ``networks.<network>.layers.<layer>.<param>`` (an Argument of a unit's network: ``...layers.Maps.value``). ``kind``: ``float``,
    ``log_float`` (log-uniform, e.g. a learning rate), ``int`` (``step`` apart) or ``choice`` (one of ``choices``).
    A number given for a list-valued property (a kernel) is applied to each of its entries.
    """

    target: str = ""
    kind: str = "float"
    low: float = 0.0
    high: float = 0.0
    step: int = 1
    choices: List[Any] = field(default_factory=list)


@dataclass
class Search:
    """The ``search`` section: what ``nnconsole search`` varies, what it optimises and for how long.

    ``objectives``: ``[error]`` (one best trial) or ``[error, multiply_adds]`` (a Pareto front); a candidate
    whose multiply-adds lie outside ``[multiply_adds_min, multiply_adds_max]`` (0 = no bound) is not trained and a
    trial whose best validation error is above ``error_max`` (0 = no bound) is kept off the front, as NNC's
    min/max bounds. ``structure`` mutates the Main network with NNC's structure-search ``policy`` (an .ini file
    relative to the project; empty = the copy of NNC's that nnconsole ships), at most ``max_mutations`` per
    trial. ``trials`` and ``timeout_minutes`` (0 = none) are the budget; ``epochs`` (0 = config.max_epoch) each
    trial's length. ``pruner`` stops a trial whose validation error is worse than the others' at the same epoch
    (``median``) or not among the best of its rung (``successive_halving``); ``none`` trains every trial to
    its end. ``sampler``: ``tpe`` (single objective), ``nsga2`` (Pareto front) or ``random``; with ``seed``
    the same storage gives the same sequence of trials.
    """

    params: List[SearchParam] = field(default_factory=list)
    structure: bool = False
    policy: str = ""
    max_mutations: int = 2
    objectives: List[str] = field(default_factory=lambda: ["error"])
    error_max: float = 0.0
    multiply_adds_min: int = 0
    multiply_adds_max: int = 0
    trials: int = 20
    timeout_minutes: float = 0.0
    epochs: int = 0
    pruner: str = "median"
    sampler: str = "tpe"
    seed: int = 0


@dataclass
class Project:
    """A whole saved project: one YAML file with ``format_version`` at the root."""

    name: str = "untitled"
    description: str = ""
    network: Network = field(default_factory=Network)
    # Networks besides Main by name (NNC's MainValidation, MainRuntime, a GAN's Generator...).
    networks: Dict[str, Network] = field(default_factory=dict)
    datasets: Datasets = field(default_factory=Datasets)
    config: TrainingConfig = field(default_factory=TrainingConfig)
    optimizer: Optimizer = field(default_factory=Optimizer)
    optimizers: List[ExtraOptimizer] = field(default_factory=list)  # besides 'optimizer', in order
    executors: List[Executor] = field(default_factory=list)  # evaluation uses the first (none: Main, once)
    multi_gpu: MultiGPU = field(default_factory=MultiGPU)
    search: Optional[Search] = None  # what 'nnconsole search' varies (None: the project has no search section)
    format_version: int = FORMAT_VERSION
    # Where the project was loaded from (not saved); dataset paths are relative to its folder.
    path: Optional[str] = field(default=None, compare=False, repr=False)

    def copy(self) -> "Project":
        return copy.deepcopy(self)
