"""A GAN's GPU all-reduce share is measured per network (issue 27 item 6).

On GPU the all-reduce overlaps backward; its cost is the extra time of an overlapped backward over the
same network's plain one. A GAN alternates a generator and a discriminator whose backwards differ: one
plain time for both charged the difference between the networks to communication. Here the recording
communicator's all-reduce costs nothing, and one network's backward takes 60 ms longer than the other's.
"""
from __future__ import annotations

from tests.support import recording_nccl as rec

SLOWER_S = 0.06


def _network(scope, width):
    import nnabla as nn
    import nnabla.functions as F
    import nnabla.parametric_functions as PF

    x = nn.Variable((4, 3))
    x.d = 1.0
    with nn.parameter_scope(scope):
        loss = F.mean(PF.affine(F.tanh(PF.affine(x, width, name="a")), 1, name="b"))
        params = list(nn.get_parameters(grad_only=True).values())
    return loss, params


def test_each_network_is_compared_with_its_own_plain_backward(monkeypatch):
    import nnabla as nn

    nn.clear_parameters()
    generator, g_params = _network("generator", 8)
    discriminator, d_params = _network("discriminator", 8)
    comm = rec.nccl_comm(monkeypatch, {str(i): p for i, p in enumerate(g_params + d_params)})
    losses = [(rec.TracedLoss(generator, "generator"), g_params),
              (rec.TracedLoss(discriminator, "discriminator", extra_s=SLOWER_S), d_params)]
    rounds = 6
    for _ in range(rounds):
        for loss, params in losses:  # every backward all-reduces (update interval 1), in turns
            nn.forward_all([loss._loss])
            comm.backward(loss, 1.0, params, reduce=True)
    nn.clear_parameters()
    # The communication cost nothing: what is counted is timing noise, far below one network's difference
    # (charged to the other network at every turn, it was (rounds - 1) x 60 ms).
    assert comm.allreduce_seconds < SLOWER_S, comm.allreduce_seconds
    callbacks = [e for e in rec.EVENTS if e["call"] == "callback"]
    assert len(callbacks) == 2 * (rounds - 1)  # after one timed probe per network, overlapped
