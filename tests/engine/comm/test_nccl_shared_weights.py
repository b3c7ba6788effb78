"""Shared weights and nnabla's all-reduce callback (issue 27 item 1), with a recording communicator.

nnabla-ext-cuda's ``all_reduce_callback`` "does not support shared parameters (such as RNNs)" (its
docstring, communicator.pyx): mpdpc.cu packs a parameter's gradient once per function that takes it and
all-reduces a full pack on another stream while backward still accumulates into that gradient, so
contributions can be lost while the ranks stay identical. The engine's real ``NcclGpuComm`` is driven here
with the engine's own graphs on the CPU (``tests/support/recording_nccl``): a network that uses a parameter
more than once is all-reduced once, after backward, one gradient's bytes; others keep the callback.
"""
from __future__ import annotations

import pytest

from tests.support import recording_nccl as rec
from nnconsole.engine.comm.nccl import NCCL_PACK_ELEMENTS


def _bytes_sent(events, uses):
    """Gradient bytes one backward sends: nnabla's callback packs each gradient once per use."""
    total = 0
    for e in events:
        if e["call"] == "callback":
            total += 4 * sum(n * size for n, size in zip(uses, e["sizes"]))
        elif e["call"] == "all_reduce":
            total += 4 * sum(e["sizes"])
    return total


def _reducing_backwards(monkeypatch, template, repeats=3, **sizes):
    import nnabla as nn

    loss, params = rec.template_graph(template, **sizes)
    comm = rec.nccl_comm(monkeypatch, {str(i): p for i, p in enumerate(params)})
    traced = rec.TracedLoss(loss)
    uses = rec.function_input_uses(loss, params)
    per_backward = []
    for _ in range(repeats):
        nn.forward_all([loss])
        rec.EVENTS.clear()
        comm.backward(traced, 1.0, params, reduce=True)
        per_backward.append(list(rec.EVENTS))
    nn.clear_parameters()
    return params, uses, per_backward


def test_an_rnns_shared_weights_are_reduced_once_after_backward(monkeypatch):
    params, uses, per_backward = _reducing_backwards(monkeypatch, "sine_rnn")
    assert max(uses) == 16, uses  # the recurrent Affine's W and b: one use per unrolled step
    gradient_bytes = 4 * sum(p.size for p in params)
    for events in per_backward:
        calls = [e["call"] for e in events]
        assert "callback" not in calls, calls  # nnabla's callback never sees a shared parameter
        assert calls == ["backward_done", "all_reduce"], calls  # after the last use: backward has returned
        [reduce] = [e for e in events if e["call"] == "all_reduce"]
        assert sorted(reduce["sizes"]) == sorted(p.size for p in params)  # each gradient exactly once
        assert reduce["division"] is True
        assert _bytes_sent(events, uses) == gradient_bytes  # one gradient's bytes, not 15x


def test_a_shared_weight_model_above_one_pack_is_reduced_once(monkeypatch):
    """sine_rnn with 512 hidden units: the recurrent W alone is above half a pack (2,097,152 elements)."""
    params, uses, per_backward = _reducing_backwards(monkeypatch, "sine_rnn", repeats=2, fc=512)
    shared_elements = sum(n * p.size for n, p in zip(uses, params) if n > 1)
    assert shared_elements > NCCL_PACK_ELEMENTS  # the callback would all-reduce full packs mid-backward
    events = per_backward[-1]  # the first reducing backward of any network is a timed probe
    assert [e["call"] for e in events] == ["backward_done", "all_reduce"]
    assert _bytes_sent(events, uses) == 4 * sum(p.size for p in params)


def test_a_network_without_shared_weights_keeps_the_overlapping_callback(monkeypatch):
    params, uses, per_backward = _reducing_backwards(monkeypatch, "digits_cnn", repeats=3)
    assert set(uses) == {1}, uses
    first, *later = per_backward
    assert [e["call"] for e in first] == ["backward_done", "all_reduce"]  # the timed probe, as before
    for events in later:
        calls = [e["call"] for e in events]
        assert calls == ["callback", "backward_done"], calls  # overlapped with backward
        assert events[0]["pack_size"] == NCCL_PACK_ELEMENTS
        assert _bytes_sent(events, uses) == 4 * sum(p.size for p in params)


@pytest.mark.parametrize("template, ratio", [("sine_rnn", 15.2), ("gan_2d", 1.4), ("digits_cnn", 1.0)])
def test_what_the_callback_would_send_per_backward(template, ratio):
    """The measurement behind the fix: bytes nnabla's callback sends relative to one gradient."""
    import nnabla as nn

    loss, params = rec.template_graph(template)
    uses = rec.function_input_uses(loss, params)
    nn.clear_parameters()
    sent = sum(n * p.size for n, p in zip(uses, params)) / sum(p.size for p in params)
    assert sent == pytest.approx(ratio, abs=0.05)
