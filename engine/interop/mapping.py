"""Name tables shared by the importers and the exporter: NNC layer/function types, their CamelCase
properties, weight names, initializers, solvers and learning-rate schedulers.

Neural Network Console (NNC) and nnabla use the same function type names as nnconsole's layer
registry for every layer nnconsole has (Affine, Convolution, ReLU, MaxPooling, SoftmaxCrossEntropy,
...), so the type map is the identity on those; what differs is how parameters are spelled (NNC's
``OutShape``/``KernelShape``/``WithBias`` versus the registry's ``out_shape``/``kernel``/``with_bias``)
and whether axes count the batch axis (nnabla's protobuf does, NNC's property sheet and nnconsole do not).
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

from nnconsole.engine.layers import all_specs
from nnconsole.engine.project.model import ALPHA_SOLVERS, INITIALIZERS, SOLVERS

# ---------------------------------------------------------------------------------------- layers
# NNC / nnabla function type -> nnconsole registry type. Types not listed here have no equivalent.
LAYER_TYPES: Dict[str, str] = {t: t for t in (
    "Input", "Affine", "Convolution", "Deconvolution", "Embed",
    "MaxPooling", "AveragePooling", "GlobalAveragePooling", "Unpooling",
    "ReLU", "LeakyReLU", "ELU", "SELU", "Swish", "Tanh", "Sigmoid", "Softmax",
    "BatchNormalization", "LayerNormalization", "Add2", "Mul2",
    "Dropout", "Reshape", "Concatenate", "Slice",
    "SoftmaxCrossEntropy", "CategoricalCrossEntropy", "BinaryCrossEntropy", "SigmoidCrossEntropy",
    "SquaredError", "AbsoluteError", "HuberLoss",
)}

# Registry types nnabla has no function for, and the function the exporter writes instead.
EXPORT_AS: Dict[str, str] = {"Flatten": "Reshape"}

# No-op types an importer may drop (their consumers read the layer's input instead).
PASS_THROUGH = ("Identity",)

# Loop-control types the importers expand into copies of the layers between them.
REPEAT_TYPES = ("RepeatStart", "RepeatEnd")

# Parameter scope nnabla's parametric functions use, and the order the weights follow the data
# input among a function's inputs (the same order nnabla's functions take them).
WEIGHT_SCOPES: Dict[str, str] = {
    "Affine": "affine", "Convolution": "conv", "Deconvolution": "deconv", "Embed": "embed",
    "BatchNormalization": "bn", "LayerNormalization": "layer_normalization",
}
WEIGHT_ORDER: Dict[str, Tuple[str, ...]] = {
    "Affine": ("W", "b"), "Convolution": ("W", "b"), "Deconvolution": ("W", "b"), "Embed": ("W",),
    "BatchNormalization": ("beta", "gamma", "mean", "var"), "LayerNormalization": ("beta", "gamma"),
}
# nnabla's SELU defaults (F.selu's scale and alpha), the constants nnconsole's SELU layer uses.
SELU_SCALE, SELU_ALPHA = 1.05070098735548, 1.673263242354377
# Running statistics: stored, never learned (learning-rate multiplier 0 in NNC files).
NON_TRAINABLE: Dict[str, Tuple[str, ...]] = {s.type: s.non_trainable for s in all_specs() if s.non_trainable}
RUNNING_STAT_INIT = {"mean": 0.0, "var": 1.0}

# NNC property name (the desktop editor's property sheet, .sdcproj) -> registry parameter name, per type.
# Values are converted by the kind of the registry's ParamSpec; axes in NNC's sheet exclude the batch axis.
PROPERTY_NAMES: Dict[str, Dict[str, str]] = {
    "Input": {"Size": "shape", "Dataset": "variable"},
    "Affine": {"OutShape": "out_shape", "WithBias": "with_bias"},
    "Convolution": {"OutMaps": "outmaps", "KernelShape": "kernel", "Padding": "pad", "Strides": "stride",
                    "Dilation": "dilation", "Group": "group", "WithBias": "with_bias"},
    "Deconvolution": {"OutMaps": "outmaps", "KernelShape": "kernel", "Padding": "pad", "Strides": "stride",
                      "Dilation": "dilation", "Group": "group", "WithBias": "with_bias"},
    "Embed": {"NumClass": "n_inputs", "Shape": "n_features"},
    "MaxPooling": {"KernelShape": "kernel", "Strides": "stride", "Padding": "pad", "IgnoreBorder": "ignore_border"},
    "AveragePooling": {"KernelShape": "kernel", "Strides": "stride", "Padding": "pad",
                       "IgnoreBorder": "ignore_border", "IncludingPad": "including_pad"},
    "GlobalAveragePooling": {},
    "Unpooling": {"KernelShape": "kernel"},
    "ReLU": {}, "Swish": {}, "Tanh": {}, "Sigmoid": {}, "SELU": {},
    "LeakyReLU": {"Alpha": "alpha"},
    "ELU": {"Alpha": "alpha"},
    "Softmax": {"Axis": "axis"},
    "BatchNormalization": {"Axes": "axes", "DecayRate": "decay_rate", "Epsilon": "eps"},
    "LayerNormalization": {"Epsilon": "eps"},
    "Add2": {}, "Mul2": {},
    "Dropout": {"P": "p"},
    "Reshape": {"OutShape": "shape"},
    "Concatenate": {"Axis": "axis"},
    "Slice": {"Start": "start", "Stop": "stop", "Step": "step"},
    "SoftmaxCrossEntropy": {"Axis": "axis"},
    "CategoricalCrossEntropy": {"Axis": "axis"},
    "BinaryCrossEntropy": {}, "SigmoidCrossEntropy": {}, "SquaredError": {}, "AbsoluteError": {},
    "HuberLoss": {"Delta": "delta"},
}
# NNC properties that are informative only (computed by the editor, or editor-only settings).
IGNORED_PROPERTIES = {
    "Name", "Input", "Output", "BaseAxis", "ParameterScope", "BorderMode", "InPlace", "IsLossFunction",
    "SkipAtTest", "SkipAtInspection", "BatchStat", "Seed", "IsParam", "Comment",
    "T.Dataset", "T.Generator", "T.GeneratorMultiplier", "Generator", "GeneratorMultiplier",
    "Times", "ID",
}
IGNORED_PROPERTY_PREFIXES = ("Cost",)


def camel_to_snake(name: str) -> str:
    """'KernelShape' -> 'kernel_shape', 'WithBias' -> 'with_bias' (fallback for unlisted properties)."""
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i and (not name[i - 1].isupper() or (i + 1 < len(name) and name[i + 1].islower())):
            out.append("_")
        out.append(ch.lower())
    return "".join(out).replace(".", "_")


def registry_type(nnc_type: str) -> Optional[str]:
    """The registry type for an NNC/nnabla function type, or None when nnconsole has no equivalent."""
    return LAYER_TYPES.get(nnc_type)


# ----------------------------------------------------------------------------------- initializers
# NNC / nnabla initializer names -> nnconsole's (INITIALIZERS); NNC spells He as HeForward.
INITIALIZER_ALIASES: Dict[str, str] = {name: name for name in INITIALIZERS}
INITIALIZER_ALIASES.update({
    "NormalAffineHeForward": "NormalAffineHe", "NormalConvolutionHeForward": "NormalConvolutionHe",
})


def initializer_type(nnc_name: str) -> Optional[str]:
    """nnconsole's initializer type for an NNC name, or None (e.g. HeBackward, CLConv, Range)."""
    return INITIALIZER_ALIASES.get(nnc_name)


# ---------------------------------------------------------------------------------------- solvers
# nnabla's Solver.type -> (nnconsole solver, name of the learning-rate field in its *_param message).
SOLVER_TYPES: Dict[str, str] = {s: s for s in SOLVERS}
SOLVER_TYPES["SGD"] = "Sgd"
SOLVER_PARAM_FIELDS: Dict[str, str] = {
    "Sgd": "sgd_param", "Momentum": "momentum_param", "Nesterov": "nesterov_param", "Adam": "adam_param",
    "AdamW": "adamw_param", "Adagrad": "adagrad_param", "RMSprop": "rmsprop_param",
    "AdaBound": "adabound_param", "Lars": "lars_param",
}
LR_FIELD: Dict[str, str] = {s: ("alpha" if s in ALPHA_SOLVERS else "lr") for s in SOLVERS}

# NNC's solver parameter names (SolverParameterName_k in .sdcproj), lower-cased -> nnconsole's.
# 'learning_rate' and 'weight_decay' go to the optimizer itself, the rest to solver_params.
SOLVER_PARAMETER_ALIASES: Dict[str, str] = {
    "alpha": "learning_rate", "learningrate": "learning_rate", "lr": "learning_rate", "eta": "learning_rate",
    "beta1": "beta1", "beta2": "beta2", "epsilon": "eps", "eps": "eps", "momentum": "momentum",
    "decay": "decay", "rho": "decay", "coefficient": "coefficient", "gamma": "gamma",
    "finallearningrate": "final_lr", "finallr": "final_lr", "final_lr": "final_lr",
    "weightdecay": "weight_decay", "wd": "weight_decay",
}

# ------------------------------------------------------------------------------------- schedulers
SCHEDULER_TYPES = {"Exponential": "exponential", "Step": "step", "Cosine": "cosine", "Polynomial": "polynomial"}


def unsupported_solver_message(name: str) -> str:
    return (f"solver {name}: nnconsole has no such solver (it has {', '.join(SOLVERS)}); Adam with the file's "
            "learning rate is used instead")
