"""nnabla's fused recurrent functions as layer types: LSTMSequence, GRUSequence and RNNSequence (group Basic).

nnabla's F.lstm / F.gru / F.rnn run a whole sequence in one function, but they read time first (T, B, I) and
take the initial states h (and c) of shape (layers, directions, B, hidden) as inputs. nnconsole's batch axis is
axis 0, so each layer here takes a per-sample (T, I) sequence, transposes it to time first around nnabla's
parametric function (PF.lstm/gru/rnn: weights ``<layer>/<lstm|gru|rnn>/weight_l0``, ``weight``, ``bias`` with
nnabla's shapes) and starts from zero states; the output is every step's hidden state, (T, D*H), or only the
last layer's final state, (D*H,). Group Basic, not Unit: each is one learned function (like Affine), not a block
the engine expands. Their names differ from NNC's LSTM unit, which is a different thing with the same name.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping

from nnconsole.engine.project.model import Initializer

from nnconsole.engine.layers.types import sequence_rnn_nntxt
from nnconsole.engine.layers.types.sequence_rnn_nntxt import STATE_AXES, ZERO_AXES
from nnconsole.engine.layers.registry import LayerSpec, ParamSpec, Shape, ShapeError, fmt_shape, register

OUTPUTS = ("sequence", "last_state")
# gates per cell and the number of bias rows nnabla stores (PF.gru keeps 4 bias rows for its 3 gates)
GATES = {"lstm": (4, 4), "gru": (3, 4), "rnn": (1, 1)}


def _sizes(ins: List[Shape], p: Mapping[str, Any], who: str):
    x = tuple(ins[0])
    if len(x) != 2:
        raise ShapeError(f"{who} expects a per-sample sequence of shape (time, features), got {fmt_shape(x)}; "
                         "reshape its input to (time, features)")
    directions = 2 if p["bidirectional"] else 1
    return int(x[0]), int(x[1]), int(p["hidden_size"]), int(p["num_layers"]), directions


def output_shape_of(kind: str):
    """(T, D*H) for every step's hidden state, (D*H,) for the final state of the last layer."""
    def rule(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
        t, _i, h, _layers, d = _sizes(ins, p, _TYPES[kind])
        return (t, d * h) if p["output"] == "sequence" else (d * h,)
    return rule


def weight_shapes_of(kind: str):
    """nnabla's parameter shapes (PF.lstm/gru/rnn)."""
    gates, bias_rows = GATES[kind]

    def rule(ins: List[Shape], p: Mapping[str, Any]) -> Dict[str, Shape]:
        _t, i, h, layers, d = _sizes(ins, p, _TYPES[kind])
        g = (gates,) if kind != "rnn" else ()
        b = (bias_rows,) if kind != "rnn" else ()
        out = {"weight_l0": (d,) + g + (h, i + h)}
        if layers > 1:
            out["weight"] = (layers - 1, d) + g + (h, d * h + h)
        out["bias"] = (layers, d) + b + (h,)
        return out
    return rule


def macs_of(kind: str):
    """Multiply-adds of the gate products over every step, layer and direction."""
    gates = GATES[kind][0]

    def count(ins: List[Shape], out: Shape, p: Mapping[str, Any]) -> int:
        t, i, h, layers, d = _sizes(ins, p, _TYPES[kind])
        per_step = sum(gates * h * ((i if n == 0 else d * h) + h) for n in range(layers))
        return t * d * per_step
    return count


def build_of(kind: str):
    """Transpose to time first, run PF.<kind> from zero states, and transpose (or pick the final state) back."""
    def build(ctx: Any, inputs: list, layer: Any) -> Any:
        import nnabla.functions as F  # deferred: nnabla stays out of the GUI
        import nnabla.parametric_functions as PF  # deferred: nnabla stays out of the GUI

        p = ctx.params(layer)
        x = inputs[0]
        features = x.shape[2]
        h_size, layers = int(p["hidden_size"]), int(p["num_layers"])
        d = 2 if p["bidirectional"] else 1
        xt = F.transpose(x, (1, 0, 2))
        # zero states built from the input, not F.constant, and reshapes with the batch axis first (nnabla's .nnp
        # writer takes a Reshape's first axis for the batch): a saved model runs at any batch size
        column = F.reshape(F.sum(F.mul_scalar(x, 0.0), axis=(1, 2), keepdims=True), (-1, 1, 1, 1))  # (B, 1, 1, 1)
        h0 = F.tile(F.transpose(column, ZERO_AXES), (layers, d, 1, h_size))
        fans = {"weight_l0": (features, h_size), "weight": (d * h_size, h_size), "bias": (h_size, h_size)}
        inits = {key: ctx.initializer(layer, key, *fan) for key, fan in fans.items()}
        common = dict(w0_init=inits["weight_l0"], w_init=inits["weight"], b_init=inits["bias"], num_layers=layers,
                      dropout=float(p["dropout"]), bidirectional=bool(p["bidirectional"]),
                      training=ctx.training, rng=ctx.rng)
        if kind == "lstm":
            y, hn, _cn = PF.lstm(xt, h0, h0, **common)
        elif kind == "gru":
            y, hn = PF.gru(xt, h0, **common)
        else:
            y, hn = PF.rnn(xt, h0, nonlinearity=p["nonlinearity"], **common)
        if p["output"] == "sequence":
            return F.transpose(y, (1, 0, 2))
        # the last layer's (B, D, H), written the way sequence_rnn_nntxt writes it
        batch_first = F.transpose(hn, STATE_AXES)
        last = F.split(batch_first, axis=1)[-1] if layers > 1 else batch_first
        return F.reshape(last, (-1, d * h_size))
    return build


def _params(kind: str) -> List[ParamSpec]:
    out = [
        ParamSpec("hidden_size", "int", 32, "Size of the hidden state (H).", min=1),
        ParamSpec("num_layers", "int", 1, "Stacked recurrent layers.", min=1),
        ParamSpec("bidirectional", "bool", False, "Also run backwards in time; the output has 2*H features."),
        ParamSpec("dropout", "float", 0.0, "Dropout between stacked layers while training.", min=0.0, max=1.0),
        ParamSpec("output", "enum", "sequence", "sequence: every step's hidden state (T, D*H); last_state: the "
                  "last layer's final hidden state (D*H).", choices=OUTPUTS),
    ]
    if kind == "rnn":
        out.append(ParamSpec("nonlinearity", "enum", "tanh", "The cell's activation.", choices=("tanh", "relu")))
    return out


_TYPES = {"lstm": "LSTMSequence", "gru": "GRUSequence", "rnn": "RNNSequence"}
_NAMES = {"lstm": "long short-term memory", "gru": "gated recurrent unit", "rnn": "Elman recurrent"}
_UNIFORM = Initializer("UniformAffineGlorot")


def _caption(p: Mapping[str, Any]) -> str:
    text = f"{p.get('hidden_size', 32)} units"
    if int(p.get("num_layers", 1)) > 1:
        text += f" · {p['num_layers']} layers"
    if p.get("bidirectional"):
        text += " · bidir"
    return text + (" · last" if p.get("output") == "last_state" else "")


for _kind, _type in _TYPES.items():
    register(LayerSpec(
        type=_type, group="Basic",
        doc=f"nnabla's fused {_NAMES[_kind]} layer (F.{_kind}) over a (time, features) sequence, from zero initial "
            "states; outputs every step's hidden state or the final one.",
        params=_params(_kind), n_inputs=(1, 1),
        output_shape=output_shape_of(_kind), weight_shapes=weight_shapes_of(_kind), macs=macs_of(_kind),
        build=build_of(_kind),
        weights={"weight_l0": _UNIFORM, "weight": _UNIFORM, "bias": Initializer("Constant", 1.0, 0.0)},
        weight_scope=_kind, weight_order=("weight_l0", "weight", "bias"),
        export_as=_kind.upper(), outside_nnc=f"nnabla's fused F.{_kind}", to_nntxt=sequence_rnn_nntxt.to_nntxt, nntxt_expand=sequence_rnn_nntxt.expand,
        from_nntxt=sequence_rnn_nntxt.from_nntxt,
        caption=_caption,
        examples=(({"hidden_size": 4}, ((5, 3),)),
                  ({"hidden_size": 3, "num_layers": 2, "bidirectional": True, "output": "last_state"}, ((4, 2),))),
    ))
