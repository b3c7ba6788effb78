"""LSTMSequence/GRUSequence/RNNSequence in nnabla's files: one layer written as the functions nnabla runs.

nnabla's LSTM/GRU/RNN read time first and take the initial states as inputs, so a layer ``r`` is written as
``Transpose (batch-first -> time-first)``, zero initial states built from the input itself (``MulScalar 0``,
``Sum``, ``Reshape``, ``Tile``: no batch size is baked into the file, so nnabla's loader may choose one), the
fused function with the layer's parameters (``r/lstm/weight_l0`` ...), and either ``Transpose`` back (every
step) or ``Split`` of the final states, ``Transpose`` and ``Reshape`` (the last layer's final state). The
function the exporter wrote for the layer (named ``r``, type LSTM/GRU/RNN, inputs x and the parameters) is
taken apart and rewritten in that order; the last function's output is still ``r``. Pure protobuf work.
"""
from __future__ import annotations

from typing import Any, List, Mapping, Sequence

from .nntxt_codec import set_shape

_FIELD = {"LSTM": "lstm_param", "GRU": "gru_param", "RNN": "rnn_param"}


def to_nntxt(f: Any, p: Mapping[str, Any], in_shapes: list, out_shape: tuple, mode: str) -> None:
    """The fused function's parameters; dropout runs only in the training network (Main)."""
    msg = getattr(f, _FIELD[f.type])
    msg.num_layers = int(p["num_layers"])
    msg.dropout = float(p["dropout"])
    msg.bidirectional = bool(p["bidirectional"])
    msg.training = mode == "train"
    if f.type == "RNN":
        msg.nonlinearity = p["nonlinearity"]


def _function(net: Any, name: str, type_: str, inputs: Sequence[str], outputs: Sequence[str]) -> Any:
    f = net.function.add()
    f.name, f.type = name, type_
    f.input.extend(inputs)
    f.output.extend(outputs)
    return f


def _variable(net: Any, name: str, shape: Sequence[int]) -> None:
    v = net.variable.add()
    v.name, v.type = name, "Buffer"
    set_shape(v.shape, shape)


def expand(net: Any, in_shapes: list, out_shape: tuple) -> None:
    """Replace the network's last function (the layer's fused LSTM/GRU/RNN) by the steps around it."""
    fused = type(net.function[-1])()
    fused.CopyFrom(net.function[-1])
    del net.function[-1]
    name, x, params = fused.name, fused.input[0], list(fused.input[1:])
    msg = getattr(fused, _FIELD[fused.type])
    layers, d = int(msg.num_layers), 2 if msg.bidirectional else 1
    steps, features = (int(s) for s in in_shapes[0])
    hidden = int(out_shape[-1]) // d
    xt = f"{name}/time_first"
    _variable(net, xt, [steps, -1, features])
    _function(net, xt, "Transpose", [x], [xt]).transpose_param.axes.extend([1, 0, 2])
    # zeros of shape (layers, directions, batch, hidden), from the input so that any batch size works
    zero = f"{name}/zero"
    _variable(net, zero, [steps, -1, features])
    _function(net, zero, "MulScalar", [xt], [zero]).mul_scalar_param.val = 0.0
    col = f"{name}/zero_column"
    _variable(net, col, [1, -1, 1])
    s = _function(net, col, "Sum", [zero], [col]).sum_param
    s.axes.extend([0, 2])
    s.keep_dims = True
    one = f"{name}/zero_state1"
    _variable(net, one, [1, 1, -1, 1])
    set_shape(_function(net, one, "Reshape", [col], [one]).reshape_param.shape, [1, 1, -1, 1])
    state = f"{name}/initial_state"
    _variable(net, state, [layers, d, -1, hidden])
    _function(net, state, "Tile", [one], [state]).tile_param.reps.extend([layers, d, 1, hidden])
    states = [state, state] if fused.type == "LSTM" else [state]
    y, hn = f"{name}/y", f"{name}/h_n"
    outputs: List[str] = [y, hn] + ([f"{name}/c_n"] if fused.type == "LSTM" else [])
    for out, shape in zip(outputs, ([steps, -1, d * hidden], [layers, d, -1, hidden], [layers, d, -1, hidden])):
        _variable(net, out, shape)
    f = net.function.add()
    f.CopyFrom(fused)
    del f.input[:], f.output[:]
    f.name = f"{name}/{fused.type.lower()}"
    f.input.extend([xt, *states, *params])
    f.output.extend(outputs)
    if len(out_shape) == 2:  # every step's hidden state, batch first again
        _function(net, name, "Transpose", [y], [name]).transpose_param.axes.extend([1, 0, 2])
        return
    parts = [f"{name}/h_n{i}" for i in range(layers)]
    for part in parts:
        _variable(net, part, [d, -1, hidden])
    if layers > 1:
        _function(net, f"{name}/layers", "Split", [hn], parts).split_param.axis = 0
    else:  # nnabla's Split wants two outputs or more: drop the layer axis instead
        set_shape(_function(net, parts[0], "Reshape", [hn], parts).reshape_param.shape, [d, -1, hidden])
    last = f"{name}/final_batch_first"
    _variable(net, last, [-1, d, hidden])
    _function(net, last, "Transpose", [parts[-1]], [last]).transpose_param.axes.extend([1, 0, 2])
    set_shape(_function(net, name, "Reshape", [last], [name]).reshape_param.shape, [-1, d * hidden])
