"""The settings schema: every CONFIG, optimizer, multi-GPU and dataset setting and every solver, declared once.

Each ``Setting`` names its YAML path, kind, default, bounds or choices, label, unit, help text and
the names NNC (.sdcproj) and nnabla (.nntxt) give it. Everything else is derived from this table:
the dataclass defaults (``model.py``), the range checks (``validate.check_settings``), the CONFIG
tab's forms, undo labels and enabled states (``console_app/config``), the settings parts of the
importers and the exporter (``engine/interop``) and docs/project-format.md (``scripts/gen_docs.py``).
``SOLVER_TABLE`` does the same for solvers: nnabla's names, parameters and defaults, and the nnabla
protobuf fields (engine/interop/solver_table.py maps the file formats' spellings onto these names).
Adding a setting is one ``Setting`` here plus its dataclass field; tests/engine/project/test_schema.py
checks that every part picked it up. Plain data: importing this loads neither Qt nor nnabla.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Tuple

# Counts the engine hands to nnabla/numpy as C integers; anything above is a typo, not a setting.
MAX_COUNT = 2**31 - 1
MAX_SEED = 2**32 - 1
MAX_WORKERS = 65_536
# Where an exported .nntxt keeps a setting nnabla has no field for (engine/interop/nntxt/exporter.py): for the docs.
EXTRAS_COMMENT = "# nnconsole-project comment"

SCHEDULES = ("exponential", "step", "cosine", "polynomial", "constant")
SCALING_POLICIES = ("linear", "keep-logical-batch", "sqrt", "none")
PRECISIONS = ("float", "half")
DEVICES = ("auto", "cpu", "cuda")
LAUNCHERS = ("auto", "mpiexec", "srun")
# What the LR update interval and the warm-up length count (NNC's LearningRate*Unit 1 and 0).
LENGTH_UNITS = ("iterations", "epochs")
# The ``search`` section (model.Search): how a value is sampled, what is optimised, pruned, and who samples.
SEARCH_KINDS = ("float", "log_float", "int", "choice")
SEARCH_OBJECTIVES = ("error", "multiply_adds")
SEARCH_PRUNERS = ("none", "median", "successive_halving")
SEARCH_SAMPLERS = ("tpe", "random", "nsga2")
# How each kind is held in the project dataclasses (checked by tests against model.py's type hints).
KINDS = {"int": "int", "float": "float", "bool": "bool", "choice": "str", "text": "str", "path": "str",
         "int_list": "List[int]", "text_list": "List[str]", "mapping": "Dict[str, float]"}


@dataclass(frozen=True)
class Setting:
    """One setting. ``kind`` is one of KINDS; ``form`` is the CONFIG group showing it ("" = none)."""

    path: str
    kind: str
    default: Any
    label: str
    doc: str
    unit: str = ""
    minimum: Optional[float] = None  # ints, floats and the items of int lists
    maximum: Optional[float] = None
    positive: bool = False  # floats: must be > 0
    choices: Tuple[str, ...] = ()
    fix: str = ""  # validation's advice when the value is out of range
    form: str = ""  # "global", "optimizer", "multi_gpu" (CONFIG tab) or "dataset" (DATASET tab)
    schedules: Tuple[str, ...] = ()  # schedule types this setting matters for (() = all)
    nnc: str = ""  # the .sdcproj key
    nntxt: str = ""  # the nnabla protobuf field (``training_config.max_epoch``)
    beside: str = ""  # the setting whose CONFIG row also shows this one (a unit next to its value)

    @property
    def section(self) -> str:
        return self.path.rsplit(".", 1)[0]

    @property
    def key(self) -> str:
        return self.path.rsplit(".", 1)[1]

    def allowed(self) -> str:
        """The allowed values in words, for docs and messages: "one of a, b", ">= 1", "> 0"."""
        if self.choices:
            return "one of " + ", ".join(self.choices)
        low = "> 0" if self.positive else (f">= {self.minimum:g}" if self.minimum is not None else "")
        high = f"<= {self.maximum:,.0f}" if self.maximum is not None else ""
        items = "items " if self.kind == "int_list" else ""
        return items + ", ".join(p for p in (low, high) if p)


_S = Setting
SETTINGS: Tuple[Setting, ...] = (
    # ---- CONFIG: Global Config (form order) ----
    _S("config.max_epoch", "int", 10, "Max epoch", "Epochs to train (passes over the training set).",
       unit="epochs", minimum=1, form="global", nnc="MaxEpoch", nntxt="training_config.max_epoch"),
    _S("config.batch_size", "int", 64, "Batch size", "Samples per iteration on each worker (per GPU); the "
       "logical batch is this x workers x update interval.", unit="samples per worker", minimum=1,
       fix="batch size is per worker; use e.g. 32", form="global", nnc="BatchSize", nntxt="network.batch_size"),
    _S("config.precision", "choice", "float", "Precision", "half = mixed precision on GPUs.", choices=PRECISIONS,
       form="global", nnc="TypeConfig", nntxt="global_config.default_context.backends"),
    _S("config.validation_interval", "int", 1, "Validation interval (epochs)", "Epochs between validations "
       "(NNC's Monitor Interval); the last epoch is always validated.", unit="epochs", minimum=1,
       fix="epochs between validations; 1 validates after every epoch", form="global", nnc="MonitorInterval",
       nntxt="training_config.monitor_interval"),
    _S("config.log_interval", "int", 10, "Log interval (iterations)", "Iterations between training-loss "
       "records on the learning curve.", unit="iterations", minimum=1,
       fix="iterations between training records; e.g. 10", form="global"),
    _S("config.save_best", "bool", True, "Save best", "Keep the parameters with the lowest validation error "
       "(parameters_best.h5).", form="global", nnc="SaveBest", nntxt="training_config.save_best"),
    _S("config.seed", "int", 0, "Seed", "Random seed: the same seed and workers replay a run.", minimum=0,
       maximum=MAX_SEED, fix="use a seed between 0 and 4294967295", form="global"),
    _S("config.device", "choice", "auto", "Device", "auto uses CUDA when available.", choices=DEVICES,
       form="global"),
    _S("config.initial_parameters", "path", "", "Initial parameters", "A .h5 of starting weights, relative to "
       "the project file (empty = the initializers)."),
    # ---- CONFIG: Optimizer (form order) ----
    _S("optimizer.solver", "choice", "Adam", "Solver", "The updater (nnabla solver).", choices=(),
       form="optimizer", nnc="SolverName", nntxt="optimizer[].solver.type"),  # choices: SOLVERS, set below
    _S("optimizer.solver_params", "mapping", {}, "Solver parameters", "The solver's own parameters (see "
       "Solvers below); missing ones take nnabla's defaults.", nnc="SolverParameterName_k/SolverParameter_k",
       nntxt="optimizer[].solver.<solver>_param"),
    _S("optimizer.learning_rate", "float", 0.001, "Learning rate", "Single-worker learning rate (Alpha for "
       "the Adam family, eta for Lamb); the plan scales it for N workers.", positive=True, form="optimizer",
       nnc="SolverParameter Alpha / LearningRate", nntxt="optimizer[].solver.<solver>_param.alpha / lr"),
    _S("optimizer.weight_decay", "float", 0.0, "Weight decay", "L2 penalty on every parameter (NNC's "
       "WeightDecay); AdamW and SgdW apply it decoupled inside the solver, AdaBelief as its wd.", minimum=0, form="optimizer", nnc="WeightDecay",
       nntxt="optimizer[].solver.weight_decay"),
    _S("optimizer.schedule.type", "choice", "exponential", "Schedule", "exponential: multiply by the LR "
       "multiplier every LR update interval (NNC).", choices=SCHEDULES, form="optimizer",
       nnc="LearningRateScheduler", nntxt="optimizer[].solver.lr_scheduler_type"),
    _S("optimizer.lr_multiplier", "float", 1.0, "LR multiplier", "The rate is multiplied by this every LR "
       "update interval.", positive=True, form="optimizer", schedules=("exponential",),
       nnc="LearningRateMultiplier", nntxt="optimizer[].solver.exponential_scheduler_param.gamma"),
    _S("optimizer.lr_update_interval", "int", 0, "LR update interval", "Single-worker iterations, or epochs, "
       "between LR multiplications (0 = never); iterations are divided by N exactly, epochs need no division.",
       unit="iterations or epochs, as lr_update_interval_unit says", minimum=0, fix="0 means never",
       form="optimizer", schedules=("exponential",), nnc="LearningRateUpdateInterval",
       nntxt="optimizer[].solver.exponential_scheduler_param.iter_interval"),
    _S("optimizer.lr_update_interval_unit", "choice", "iterations", "LR update interval unit", "What the LR "
       "update interval counts: single-worker iterations or epochs (NNC's LearningRateUpdateIntervalUnit; .nntxt "
       "files count iterations only).", choices=LENGTH_UNITS, form="optimizer", schedules=("exponential",),
       beside="optimizer.lr_update_interval", nnc="LearningRateUpdateIntervalUnit"),
    _S("optimizer.schedule.steps", "int_list", [], "Step points", "step schedule: iterations (single worker) "
       "at which the LR is multiplied by gamma.", unit="iterations", minimum=1, fix="step points are iterations",
       form="optimizer", schedules=("step",), nnc="LearningRateSteps",
       nntxt="optimizer[].solver.step_scheduler_param.iter_steps"),
    _S("optimizer.schedule.gamma", "float", 0.1, "Gamma", "step schedule: the factor applied at each step "
       "point.", positive=True, form="optimizer", schedules=("step",), nnc="LearningRateMultiplier",
       nntxt="optimizer[].solver.step_scheduler_param.gamma"),
    _S("optimizer.schedule.max_iter", "int", 0, "Decay length", "cosine/polynomial: iterations of decay (0 = "
       "the whole run).", unit="iterations", minimum=0, fix="0 means the whole run", form="optimizer",
       schedules=("cosine", "polynomial"), nntxt="optimizer[].solver.<cosine|polynomial>_scheduler_param.max_iter"),
    _S("optimizer.schedule.power", "float", 1.0, "Power", "polynomial schedule: the decay's exponent.",
       minimum=0, form="optimizer", schedules=("polynomial",), nnc="LearningRatePower",
       nntxt="optimizer[].solver.polynomial_scheduler_param.power"),
    _S("optimizer.warmup_iterations", "int", 0, "Warm-up length", "Linear warm-up from 0 over this many "
       "single-worker iterations, or epochs (warmup_unit); iterations are divided by N, epochs need no division.",
       unit="iterations or epochs, as warmup_unit says", minimum=0, form="optimizer",
       nnc="LearningRateWarmupLength", nntxt="optimizer[].solver.linear_warmup_scheduler_param.warmup_iter"),
    _S("optimizer.warmup_unit", "choice", "iterations", "Warm-up unit", "What the warm-up length counts: "
       "single-worker iterations or epochs (NNC's LearningRateWarmupLengthUnit; .nntxt files count iterations "
       "only).", choices=LENGTH_UNITS, form="optimizer", beside="optimizer.warmup_iterations",
       nnc="LearningRateWarmupLengthUnit"),
    _S("optimizer.update_interval", "int", 1, "Update interval", "Gradient accumulation: update the weights "
       "every U iterations.", unit="iterations", minimum=1, fix="1 means update every iteration",
       form="optimizer", nnc="UpdateInterval", nntxt="optimizer[].update_interval"),
    # ---- CONFIG: Multi-GPU (form order) ----
    _S("multi_gpu.workers", "int", 1, "Workers (GPUs or processes)", "Worker processes, one per GPU (or CPU "
       "processes).", minimum=1, maximum=MAX_WORKERS, fix="1 trains in a single process", form="multi_gpu"),
    _S("multi_gpu.simulate_workers", "int", 0, "Simulate workers", "Train in this one process exactly as N "
       "workers would (their batches, logical batch, learning rate and gradient, one worker after another) to "
       "see what N workers do to the model before owning them; 0: off. With Workers M (N a multiple of M) each "
       "worker simulates N/M. The command line's --simulate-workers or --gpus wins.", minimum=0, maximum=MAX_WORKERS, fix="0 trains as multi_gpu.workers says",
       form="multi_gpu"),
    _S("multi_gpu.scaling", "choice", "linear", "Scaling policy", "linear: LR x N (NNC's advice); "
       "keep-logical-batch: batch / N; sqrt: LR x sqrt(N).", choices=SCALING_POLICIES, form="multi_gpu"),
    _S("multi_gpu.warmup_epochs", "float", 0.0, "Warm-up epochs", "Gradual warm-up from the single-worker LR "
       "to the scaled LR (Goyal et al. 2017).", unit="epochs", minimum=0, maximum=MAX_COUNT, form="multi_gpu"),
    _S("multi_gpu.hosts", "text_list", [], "Hosts", "host or host:slots, comma-separated (mpiexec).",
       form="multi_gpu"),
    _S("multi_gpu.hostfile", "path", "", "Hostfile", "An MPI hostfile instead of hosts.", form="multi_gpu"),
    _S("multi_gpu.launcher", "choice", "auto", "Launcher", "How workers start: auto picks srun inside a Slurm "
       "allocation, else mpiexec.", choices=LAUNCHERS, form="multi_gpu"),
    _S("multi_gpu.mpiexec_args", "text_list", [], "Launcher arguments", "Extra launcher options; a project "
       "file may only hold options that cannot run other programs."),
    _S("multi_gpu.bucket_mb", "float", 0.0, "All-reduce bucket (MB)", "CPU all-reduce bucket size (0 = the "
       "engine's default).", unit="MB", minimum=0, maximum=1 << 20),
    _S("multi_gpu.allreduce_precision", "choice", "float", "All-reduce precision", "half: the CPU all-reduce "
       "sends gradients as float16 (half the bytes; each message scaled so its sum cannot overflow).",
       choices=PRECISIONS, form="multi_gpu"),
    _S("multi_gpu.allreduce_overlap", "bool", True, "Overlap all-reduce with backward", "CPU runs across "
       "hosts: a communication thread all-reduces each bucket of gradients as soon as backward has finished "
       "it. One-host runs never overlap (there the all-reduce is a memory copy by the cores that compute); "
       "GPU runs always do.", form="multi_gpu"),
    _S("multi_gpu.link", "text", "", "Link between hosts", "For the predicted time per epoch: bandwidth[,latency] "
       "of the network between hosts, e.g. 1gbit,100us (nnconsole doctor --hosts measures it); empty: gigabit "
       "Ethernet is assumed.", form="multi_gpu"),
    # ---- DATASET tab ----
    _S("datasets.training", "path", "", "Training dataset", "Training CSV, relative to the project file.",
       form="dataset", nntxt="dataset[Training].uri"),
    _S("datasets.validation", "path", "", "Validation dataset", "Validation CSV, relative to the project file.",
       form="dataset", nntxt="dataset[Validation].uri"),
    _S("datasets.shuffle", "bool", True, "Shuffle", "Shuffle the training set every epoch.", form="dataset",
       nntxt="dataset[Training].shuffle"),
    _S("datasets.normalize", "bool", True, "Normalize images (/255)", "Divide image pixels by 255, as NNC "
       "does.", form="dataset", nntxt="dataset[].no_image_normalization (inverted)"),
    _S("datasets.cache", "bool", True, "Cache decoded images", "Keep decoded images in a cache beside the CSV "
       "for the next run.", form="dataset", nnc="EnableCache", nntxt=EXTRAS_COMMENT),
    _S("datasets.cache_budget", "float", 0.0, "Cache disk budget (GB)", "The most disk the decoded images may "
       "take in the cache; a dataset whose images would take more is decoded on the fly, each batch in parallel "
       "ahead of training, and only its index is cached. 0: automatic, 80% of the cache folder's free space.",
       unit="GB", minimum=0, maximum=MAX_COUNT, fix="0 lets nnconsole decide from the free space",
       form="dataset", nntxt=EXTRAS_COMMENT),
)


# ---------------------------------------------------------------------------------------------- solvers
@dataclass(frozen=True)
class SolverSpec:
    """One solver: nnabla's class name, its parameters and defaults, and how NNC and nnabla files spell it.

    ``params`` are nnabla's keyword arguments besides the learning rate and ``wd`` (nnabla's defaults,
    which equal NNC's for every NNC solver). ``nnc`` lists NNC's parameters in NNC's order as
    (NNC's name, nnconsole's key, NNC's default); the keys ``learning_rate`` and ``weight_decay`` are the
    optimizer's own settings, the others ``solver_params``. ``flags`` are parameters that are booleans
    (0 or 1 in ``solver_params``). ``weight_decay`` says where ``optimizer.weight_decay`` goes:
    "" = the engine's ``solver.weight_decay`` (L2 added to the gradient, nnabla's and NNC's WeightDecay);
    "decoupled" = nnabla's ``wd`` argument, decoupled from the gradient (AdamW, SgdW); "wd" = nnabla's
    ``wd`` argument when its ``weight_decouple`` flag is 1 (decoupled), else ``solver.weight_decay`` (AdaBelief;
    nnabla ignores its ``wd`` without weight_decouple); "fused" = ``solver.weight_decay``, which these solvers
    apply decoupled inside their update (Lamb, Lion). NNC trains through nnabla_cli, which calls
    ``solver.weight_decay(WeightDecay)`` before every update when WeightDecay > 0: for AdamW, SgdW and a
    decoupled AdaBelief that replaces the solver's own ``wd`` for the update (it is the decoupled rate).
    """

    name: str
    params: Mapping[str, float]
    learning_rate_name: str = "lr"  # "alpha" for the Adam family (NNC shows Alpha), "eta" for Lamb
    proto_field: str = ""  # the *_param message of nnabla's Solver proto
    file_names: Tuple[str, ...] = ()  # other spellings of Solver.type in nnabla files
    weight_decay: str = ""  # "", "decoupled", "wd" or "fused" (see above)
    nnc: Tuple[Tuple[str, str, float], ...] = ()  # NNC's parameters; () = not one of NNC's solvers
    flags: Tuple[str, ...] = ()

    @property
    def has_wd_argument(self) -> bool:
        """True when the solver has nnabla's ``wd`` argument (AdamW, SgdW, AdaBelief)."""
        return self.weight_decay in ("decoupled", "wd")

    def decays_inside(self, solver_params: Mapping[str, float]) -> bool:
        """True when ``optimizer.weight_decay`` goes to the solver's ``wd`` (decoupled) rather than to
        ``solver.weight_decay`` (L2 on the gradient): AdamW, SgdW, and AdaBelief with weight_decouple 1
        (nnabla's AdaBelief ignores ``wd`` otherwise)."""
        if self.weight_decay == "wd":
            return bool(float(solver_params.get("weight_decouple", self.params.get("weight_decouple", 0.0))))
        return self.weight_decay == "decoupled"

    @property
    def nnc_learning_rate(self) -> float:
        """NNC's default learning rate (Alpha) for this solver, or nnabla's when NNC has no such solver."""
        return next((d for _, key, d in self.nnc if key == "learning_rate"), 0.001)


_ADAM = {"beta1": 0.9, "beta2": 0.999, "eps": 1e-8}
_NNC_ADAM = (("Alpha", "learning_rate", 0.001), ("Beta1", "beta1", 0.9), ("Beta2", "beta2", 0.999),
             ("Epsilon", "eps", 1e-8))
_NNC_BOUND = _NNC_ADAM + (("FinalLR", "final_lr", 0.1), ("Gamma", "gamma", 0.001))
_ABELIEF_FLAGS = ("amsgrad", "weight_decouple", "fixed_decay", "rectify")
# One row per solver, NNC's 15 (solver_component.txt, in its order) then Lamb and Lion (nnabla only).
SOLVER_TABLE: Tuple[SolverSpec, ...] = (
    SolverSpec("AdaBelief", dict(_ADAM, **{f: 0.0 for f in _ABELIEF_FLAGS}), "alpha", "adabelief_param",
               weight_decay="wd", flags=_ABELIEF_FLAGS,
               nnc=_NNC_ADAM + (("Weight Decay", "weight_decay", 1e-4), ("AMSGrad", "amsgrad", 0.0),
                                ("WD Decouple", "weight_decouple", 0.0), ("Fixed Decay", "fixed_decay", 0.0),
                                ("Rectify", "rectify", 0.0))),
    SolverSpec("Adadelta", {"decay": 0.95, "eps": 1e-6}, proto_field="adadelta_param",
               nnc=(("LearningRate", "learning_rate", 1.0), ("Decay", "decay", 0.95), ("Epsilon", "eps", 1e-6))),
    SolverSpec("Adagrad", {"eps": 1e-8}, proto_field="adagrad_param",
               nnc=(("LearningRate", "learning_rate", 0.01), ("Epsilon", "eps", 1e-8))),
    SolverSpec("Adam", dict(_ADAM), "alpha", "adam_param", nnc=_NNC_ADAM),
    SolverSpec("AdamW", dict(_ADAM), "alpha", "adamw_param", weight_decay="decoupled",
               nnc=_NNC_ADAM + (("Weight Decay", "weight_decay", 1e-4),)),
    SolverSpec("Adamax", dict(_ADAM), "alpha", "adamax_param",
               nnc=(("Alpha", "learning_rate", 0.002),) + _NNC_ADAM[1:]),
    SolverSpec("AdaBound", dict(_ADAM, final_lr=0.1, gamma=0.001), "alpha", "adabound_param", nnc=_NNC_BOUND),
    SolverSpec("AMSGRAD", dict(_ADAM, bias_correction=0.0), "alpha", "amsgrad_param", flags=("bias_correction",),
               nnc=_NNC_ADAM),
    SolverSpec("AMSBound", dict(_ADAM, final_lr=0.1, gamma=0.001, bias_correction=0.0), "alpha", "amsbound_param",
               flags=("bias_correction",), nnc=_NNC_BOUND),
    SolverSpec("Lars", {"momentum": 0.9, "coefficient": 0.001, "eps": 1e-6}, proto_field="lars_param",
               nnc=(("LearningRate", "learning_rate", 0.001), ("Momentum", "momentum", 0.9),
                    ("Coefficient", "coefficient", 0.001), ("Epsilon", "eps", 1e-6))),
    SolverSpec("Momentum", {"momentum": 0.9}, proto_field="momentum_param",
               nnc=(("LearningRate", "learning_rate", 0.01), ("Momentum", "momentum", 0.9))),
    SolverSpec("Nesterov", {"momentum": 0.9}, proto_field="nesterov_param",
               nnc=(("LearningRate", "learning_rate", 0.01), ("Momentum", "momentum", 0.9))),
    SolverSpec("RMSprop", {"decay": 0.9, "eps": 1e-8}, proto_field="rmsprop_param",
               nnc=(("LearningRate", "learning_rate", 0.001), ("Decay", "decay", 0.9), ("Epsilon", "eps", 1e-8))),
    SolverSpec("Sgd", {}, proto_field="sgd_param", file_names=("SGD",), nnc=(("LearningRate", "learning_rate", 0.01),)),
    SolverSpec("SgdW", {"momentum": 0.9}, proto_field="sgdw_param", weight_decay="decoupled",
               nnc=(("LearningRate", "learning_rate", 0.001), ("Momentum", "momentum", 0.9),
                    ("Weight Decay", "weight_decay", 1e-4))),
    SolverSpec("Lamb", {"beta1": 0.9, "beta2": 0.999, "gamma_l": 0.0, "gamma_u": 10.0, "eps": 1e-6,
                        "bias_correction": 0.0}, "eta", "lamb_param", weight_decay="fused", flags=("bias_correction",)),
    SolverSpec("Lion", {"beta1": 0.9, "beta2": 0.99}, proto_field="lion_param", weight_decay="fused"),
)
SOLVER_SPECS: Dict[str, SolverSpec] = {s.name: s for s in SOLVER_TABLE}
SOLVERS: Tuple[str, ...] = tuple(SOLVER_SPECS)
ALPHA_SOLVERS: Tuple[str, ...] = tuple(s.name for s in SOLVER_TABLE if s.learning_rate_name == "alpha")
SOLVER_PARAMS: Dict[str, Dict[str, float]] = {s.name: dict(s.params) for s in SOLVER_TABLE}
# Solver parameters whose meaning bounds them (the same name means the same thing in every solver): the
# decay rates of running averages and momentum are fractions in [0, 1) (1 never forgets, above 1 diverges);
# epsilons, the LARS coefficient and the AdaBound/AMSBound and Lamb bounds are not negative.
UNIT_INTERVAL_SOLVER_PARAMS = ("beta1", "beta2", "decay", "momentum")
NON_NEGATIVE_SOLVER_PARAMS = ("eps", "coefficient", "final_lr", "gamma", "gamma_l", "gamma_u")
SETTINGS = tuple(dataclasses.replace(s, choices=SOLVERS) if s.path == "optimizer.solver" else s for s in SETTINGS)
BY_PATH: Dict[str, Setting] = {s.path: s for s in SETTINGS}


# ---------------------------------------------------------------------------------------------- helpers
def setting(path: str) -> Setting:
    """The setting at dotted ``path`` (KeyError names it when there is none)."""
    return BY_PATH[path]


def settings_in(section: str) -> Tuple[Setting, ...]:
    """The settings directly inside ``section`` ("config", "optimizer.schedule"), in schema order."""
    return tuple(s for s in SETTINGS if s.section == section)


def form_settings(form: str) -> Tuple[Setting, ...]:
    """The settings one form shows ("global", "optimizer", "multi_gpu", "dataset"), in form order."""
    return tuple(s for s in SETTINGS if s.form == form)


def default_of(path: str) -> Any:
    """A dataclass field whose default is the schema's (a fresh copy for lists and mappings)."""
    value = BY_PATH[path].default
    if isinstance(value, (list, dict)):
        return dataclasses.field(default_factory=lambda: type(value)(value))
    return dataclasses.field(default=value)


def value_at(project: Any, path: str) -> Any:
    """The value of dotted ``path`` in a Project (or any object with those attributes)."""
    target = project
    for part in path.split("."):
        target = getattr(target, part)
    return target


def set_value_at(project: Any, path: str, value: Any) -> None:
    """Set dotted ``path`` in a Project (or any object with those attributes)."""
    head, _, last = path.rpartition(".")
    setattr(value_at(project, head) if head else project, last, value)
