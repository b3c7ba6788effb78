"""CPU all-reduce overlapped with backward (issue 20, multi_gpu.allreduce_overlap): readiness counts, the
communication thread, and 2 ranks reducing to the same bits with and without overlap."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from nnconsole.engine.launch import launcher as launch
from nnconsole.engine.comm.overlap import BucketReadiness, OverlappedBackward
from nnconsole.engine.project.io import save_project
from nnconsole.engine.test_seams import seam_environment
from tests.support.cli import nnconsole, run_dir_from
from tests.support.paths import MPI_SCRIPTS, ROOT
from tests.support.training import final_params, max_relative_error
from nnconsole.engine.check.project_file import load_valid_project


@pytest.fixture
def graph():
    """x -> affine l0 -> tanh -> affine l1 -> tanh -> affine l2 -> mean; plus a parameter the loss does not use."""
    import nnabla as nn
    import nnabla.functions as F
    import nnabla.parametric_functions as PF

    nn.clear_parameters()
    rng = np.random.RandomState(0)
    x = nn.Variable((8, 6))
    x.d = rng.randn(*x.shape)
    h = x
    for i in range(3):
        h = F.tanh(PF.affine(h, 5, name=f"l{i}"))
    loss = F.mean(h * h)
    with nn.parameter_scope("unused"):
        nn.parameter.get_parameter_or_create("W", (4, 4), need_grad=True)
    params = nn.get_parameters(grad_only=True)
    yield loss, params
    nn.clear_parameters()


def _reference_gradients(loss, params) -> dict:
    for p in params.values():
        p.grad.zero()
    loss.forward()
    loss.backward(1.0, clear_buffer=False)
    return {k: np.array(p.g, copy=True) for k, p in params.items()}


class CountingLoss:
    """The loss, with a count of the functions whose backward has finished (seen through the same hook)."""

    def __init__(self, loss) -> None:
        self.loss, self.done = loss, 0

    def visit(self, f) -> None:
        self.loss.visit(f)

    def backward(self, grad, clear_buffer, function_post_hook) -> None:
        def hook(function) -> None:
            self.done += 1
            function_post_hook(function)
        self.loss.backward(grad, clear_buffer=clear_buffer, function_post_hook=hook)


def test_readiness_counts_each_use_of_a_parameter_and_none_for_an_unused_one():
    import nnabla as nn
    import nnabla.functions as F
    import nnabla.parametric_functions as PF

    nn.clear_parameters()
    x = nn.Variable((2, 3))
    h = F.tanh(PF.affine(x, 3, name="a"))
    h = PF.affine(F.tanh(PF.affine(h, 3, name="shared")), 3, name="shared")  # one layer applied twice
    nn.parameter.get_parameter_or_create("lonely", (2,), need_grad=True)
    params = nn.get_parameters(grad_only=True)
    names = list(params)
    readiness = BucketReadiness(F.mean(h), {hash(params[k]): i for i, k in enumerate(names)}, len(names))
    uses = dict(zip(names, readiness.uses))
    nn.clear_parameters()
    assert uses == {"a/affine/W": 1, "a/affine/b": 1, "shared/affine/W": 2, "shared/affine/b": 2, "lonely": 0}


def test_buckets_leave_during_backward_last_layer_first_and_already_final(graph):
    loss, params = graph
    expected = _reference_gradients(loss, params)
    names = list(params)
    bucket_of = [int(k[1]) if k.startswith("l") else 3 for k in names]  # layer i -> bucket i, unused -> 3
    counting = CountingLoss(loss)
    handed, reduced_on = [], []

    def prepare(index: int) -> None:  # main thread, when the bucket is handed to the communication thread
        handed.append((index, counting.done, {k: np.array(params[k].g, copy=True)
                                              for k, b in zip(names, bucket_of) if b == index}))

    overlapped = OverlappedBackward(prepare, lambda index: reduced_on.append((index, threading.current_thread())))
    for p in params.values():
        p.grad.zero()
    loss.forward()
    readiness = overlapped.readiness(counting, "plan", [params[k] for k in names], bucket_of, 4)
    overlapped.run(counting, 1.0, readiness)
    total = counting.done
    assert [index for index, _, _ in handed] == [2, 1, 0, 3]  # from the loss towards the input; unused last
    assert handed[0][1] < total and handed[1][1] < total  # l2 and l1 left while backward still ran
    assert handed[3][1] == total  # the unused parameter's bucket: after backward
    for _, _, grads in handed:  # what left was already the final gradient
        for k, g in grads.items():
            np.testing.assert_array_equal(g, expected.get(k, np.zeros_like(g)))
    assert [i for i, _ in reduced_on] == [2, 1, 0, 3]
    assert all(t is not threading.main_thread() for _, t in reduced_on)
    overlapped.close()


def test_an_error_in_the_thread_reaches_the_caller_after_every_bucket_is_done(graph):
    loss, params = graph
    names = list(params)
    bucket_of = [int(k[1]) if k.startswith("l") else 3 for k in names]
    reduced = []

    def reduce(index: int) -> None:
        reduced.append(index)
        if index == 1 and reduced.count(1) == 1:
            raise ValueError("peer went away")

    overlapped = OverlappedBackward(lambda index: None, reduce)
    loss.forward()
    readiness = overlapped.readiness(loss, "plan", [params[k] for k in names], bucket_of, 4)
    with pytest.raises(ValueError, match="peer went away"):
        overlapped.run(loss, 1.0, readiness)
    assert sorted(reduced) == [0, 1, 2, 3]  # nothing left in flight when the error is raised
    loss.forward()
    overlapped.run(loss, 1.0, readiness)  # the thread still serves the next backward
    assert sorted(reduced) == [0, 0, 1, 1, 2, 2, 3, 3]
    overlapped.close()


@pytest.mark.mpi
def test_overlap_changes_when_buckets_are_reduced_not_what_on_two_ranks():
    """Under mpiexec -n 2: 5 SGD steps with the all-reduce overlapped give bit-identical gradients and parameters
    to backward-then-all-reduce, in float32 and float16 messages, with a layer applied twice and a parameter the
    loss never reaches (tests/mpi_scripts/overlap_check.py). A bucket sent after its first use instead of its
    last fails it."""
    cmd = [launch.find_mpiexec(), "-n", "2", "--oversubscribe", sys.executable,
           os.path.join(MPI_SCRIPTS, "overlap_check.py")]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=launch.mpi_environment(), cwd=ROOT)
    assert out.returncode == 0, out.stderr
    result = json.loads([line for line in out.stdout.splitlines() if line.startswith("{")][-1])
    assert result["ok"] and result["size"] == 2, result


@pytest.mark.mpi
def test_synchronized_batchnorm_all_reduces_beside_the_overlap_thread(tmp_path):
    """Synchronized BatchNormalization all-reduces inside backward on the main thread while the communication
    thread reduces buckets on its own communicator: 2 workers end identical with overlap on and off."""
    from tests.support.projects import bn_project

    finals = {}
    for overlap in (False, True):
        path = bn_project(str(tmp_path / str(overlap)), sync=True, n=64, batch=8, epochs=2, lr=0.2, scaling="none",
                          workers=2, hidden=32)
        project = load_valid_project(path, check_datasets=False)
        project.multi_gpu.allreduce_overlap = overlap
        project.multi_gpu.bucket_mb = 0.001
        save_project(project, path, backup=False)
        out = nnconsole(["train", path, "-q"], env=seam_environment(overlap_on_one_host=True))
        finals[overlap] = final_params(run_dir_from(out.stdout))
    assert max_relative_error(finals[False], finals[True]) == 0.0
