"""LSTMSequence/GRUSequence/RNNSequence in nnabla's files: one layer written as the functions nnabla runs.

nnabla's LSTM/GRU/RNN read time first and take the initial states as inputs, so a layer ``r`` is written as
``Transpose (batch-first -> time-first)``, zero initial states built from the input itself (``MulScalar 0``,
``Sum``, ``Reshape``, ``Transpose``, ``Tile``: no batch size is baked into the file, so nnabla's loader may
choose one), the fused function with the layer's parameters (``r/lstm/weight_l0`` ...), and either ``Transpose``
back (every step) or ``Transpose`` of the final states to batch first, ``Split`` of the layers (when several) and
``Reshape`` (the last layer's final state). The
function the exporter wrote for the layer (named ``r``, type LSTM/GRU/RNN, inputs x and the parameters) is
taken apart and rewritten in that order; the last function's output is still ``r``. Pure protobuf work.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

from nnconsole.engine.layers.nntxt_codec import f7, set_shape, Unsupported

_FIELD = {"LSTM": "lstm_param", "GRU": "gru_param", "RNN": "rnn_param"}
ZERO_AXES = (1, 2, 0, 3)  # (batch, 1, 1, 1) -> (1, 1, batch, 1)
STATE_AXES = (2, 0, 1, 3)  # (layers, directions, batch, hidden) -> batch first


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
    # zeros of shape (layers, directions, batch, hidden), from the input so that any batch size works; every
    # Reshape keeps the batch axis first (nnabla's .nnp writer takes a Reshape's first axis for the batch)
    zero = f"{name}/zero"
    _variable(net, zero, [-1, steps, features])
    _function(net, zero, "MulScalar", [x], [zero]).mul_scalar_param.val = 0.0
    col = f"{name}/zero_column"
    _variable(net, col, [-1, 1, 1])
    s = _function(net, col, "Sum", [zero], [col]).sum_param
    s.axes.extend([1, 2])
    s.keep_dims = True
    four = f"{name}/zero_4d"
    _variable(net, four, [-1, 1, 1, 1])
    set_shape(_function(net, four, "Reshape", [col], [four]).reshape_param.shape, [-1, 1, 1, 1])
    one = f"{name}/zero_state1"
    _variable(net, one, [1, 1, -1, 1])
    _function(net, one, "Transpose", [four], [one]).transpose_param.axes.extend(ZERO_AXES)
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
    batch_first = f"{name}/h_n_batch_first"
    _variable(net, batch_first, [-1, layers, d, hidden])
    _function(net, batch_first, "Transpose", [hn], [batch_first]).transpose_param.axes.extend(STATE_AXES)
    last = batch_first
    if layers > 1:  # the last layer's (batch, D, H); nnabla's Split wants two outputs or more
        parts = [f"{name}/h_n{i}" for i in range(layers)]
        for part in parts:
            _variable(net, part, [-1, d, hidden])
        _function(net, f"{name}/layers", "Split", [batch_first], parts).split_param.axis = 1
        last = parts[-1]
    set_shape(_function(net, name, "Reshape", [last], [name]).reshape_param.shape, [-1, d * hidden])


# ------------------------------------------------------------------------------------------------ reading back
def from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> dict:
    """Parameters of a collapsed LSTM/GRU/RNN (see ``collapse``): the hidden size and directions from
    weight_l0 (D, [gates,] H, I + H), the rest from the function's message."""

    w0 = weights.get("weight_l0")
    if not w0:
        raise Unsupported("no weight_l0 parameter, so the hidden size is unknown")
    msg = getattr(f, _FIELD[f.type[:-len("Sequence")]])
    params = {"hidden_size": int(w0[-2]), "num_layers": max(1, int(msg.num_layers)),
              "bidirectional": int(w0[0]) == 2, "dropout": f7(msg.dropout)}
    if f.type == "RNNSequence":
        params["nonlinearity"] = msg.nonlinearity or "tanh"
    return params


def _is_transpose_01(f: Any) -> bool:
    return f is not None and f.type == "Transpose" and list(f.transpose_param.axes) == [1, 0, 2]


def _zero_state_chain(var: str, producer: Mapping[str, Any]) -> Optional[list]:
    """The functions making ``var`` a zero initial state (a Constant 0, or Tile(Reshape(Sum(MulScalar 0))) as
    ``expand`` writes it, Tile(Transpose(Reshape(Sum(MulScalar 0))))); None when it is
    anything else."""
    f = producer.get(var)
    if f is None:
        return None
    if f.type == "Constant":
        return [f] if f.constant_param.val == 0.0 else None
    chain = []
    for want in ("Tile", "Transpose", "Reshape", "Sum", "MulScalar"):
        if f is None or f.type != want or (want == "Transpose" and tuple(f.transpose_param.axes) != ZERO_AXES):
            return None
        chain.append(f)
        if want == "MulScalar":
            return chain if f.mul_scalar_param.val == 0.0 else None
        f = producer.get(f.input[0])
    return None


def collapse(net: Any, unsupported: Optional[List[str]] = None) -> Dict[str, Dict[str, Any]]:
    """Turn each nnabla LSTM/GRU/RNN that reads a batch-first input through Transpose, starts from zero states
    and gives every step (through Transpose) or the last layer's final state (Transpose, Split when several
    layers, Reshape) back into one LSTMSequence/GRUSequence/RNNSequence function, in place; other fused functions are
    left alone (their import is reported; GRU/RNN here, LSTM by NNC's LSTM unit's hook). Returns {function name: parameters the message cannot hold}."""
    producer = {out: f for f in net.function for out in f.output}
    users: Dict[str, list] = {}
    for f in net.function:
        for i in f.input:
            users.setdefault(i, []).append(f)
    removed: List[Any] = []
    extra: Dict[str, Dict[str, Any]] = {}
    replacements = []
    for f in list(net.function):
        if f.type not in _FIELD:
            continue
        n_states = 2 if f.type == "LSTM" else 1
        before = producer.get(f.input[0])
        chains = [_zero_state_chain(s, producer) for s in f.input[1:1 + n_states]]
        if not _is_transpose_01(before) or any(c is None for c in chains):
            continue
        y, hn = f.output[0], f.output[1]
        after = users.get(y, [])
        if len(after) == 1 and _is_transpose_01(after[0]) and not users.get(hn):
            steps, output = [after[0]], "sequence"
        elif not after and len(users.get(hn, [])) == 1:
            steps = _last_state_steps(users.get(hn, [])[0], users)
            if steps is None:
                continue
            output = "last_state"
        else:
            continue
        final = steps[-1]
        new = type(f)()
        new.CopyFrom(f)
        new.name, new.type = final.name, f.type + "Sequence"
        del new.input[:], new.output[:]
        new.input.extend([before.input[0], *f.input[1 + n_states:]])
        new.output.append(final.output[0])
        replacements.append((f, new))
        removed += [before, *steps, *(g for c in chains for g in c)]
        extra[new.name] = {"output": output}
    done = {id(old) for old, _new in replacements}
    for f in net.function:
        if f.type in ("GRU", "RNN") and id(f) not in done and unsupported is not None:
            unsupported.append(f"layer '{f.name}' ({f.type}): nnabla's {f.type} is read as a {f.type}Sequence layer "
                               "only when a Transpose makes its input batch-first and its initial state is zeros")
    if not replacements:
        return extra
    gone = {id(f) for f in removed} | {id(old) for old, _new in replacements}
    new_for = {id(old): new for old, new in replacements}
    remade = {new.output[0] for _old, new in replacements}  # the layers' outputs, now made by the new functions
    kept = []
    for f in net.function:  # a removed step another function still reads stays
        if id(f) in new_for:
            kept.append(new_for[id(f)])
        elif id(f) not in gone or any(id(u) not in gone for out in f.output if out not in remade
                                      for u in users.get(out, [])):
            kept.append(f)
    del net.function[:]
    net.function.extend(kept)
    used = {name for f in kept for name in (*f.input, *f.output)}
    dropped = {name for f in removed for name in (*f.input, *f.output)} - used  # the steps' own variables
    dropped |= {name for old, _new in replacements for name in (*old.input, *old.output)} - used
    variables = [v for v in net.variable if v.name not in dropped]
    del net.variable[:]
    net.variable.extend(variables)
    return extra


def _last_state_steps(first: Any, users: Mapping[str, list]) -> Optional[list]:
    """Transpose of the final states to batch first, Split of the last layer (several layers), Reshape to
    (batch, D*H)."""
    if first.type != "Transpose" or tuple(first.transpose_param.axes) != STATE_AXES:
        return None
    steps = [first]
    nxt = users.get(first.output[0], [])
    if len(nxt) == 1 and nxt[0].type == "Split":
        steps.append(nxt[0])
        nxt = users.get(nxt[0].output[-1], [])
    if len(nxt) != 1 or nxt[0].type != "Reshape":
        return None
    return steps + [nxt[0]]
