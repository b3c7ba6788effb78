"""``multi_gpu.allreduce_precision: half`` on GPU (issue 27 item 5): refused with a message, predicted at 4 bytes.

The setting is the CPU all-reduce's float16 messages (engine/comm/half.py). On GPU nnabla's NCCL
communicator all-reduces the gradients in their own type: float32, or float16 when config.precision is
half. The plan says so, and the predictor counts what NCCL really sends.
"""
from __future__ import annotations

import pytest

from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.plan.explain import GPU_HALF_ALLREDUCE_MESSAGE
from nnconsole.engine.plan.timing_inputs import layouts_for, predict_project, wire_precision
from nnconsole.engine.plan.worker_plan import make_plan
from tests.support.projects import tabular_project

GRADIENT_BYTES = 268  # the 4-8-3 MLP: 67 parameters x 4 bytes


def _project(tmp_path, device, allreduce, precision="float"):
    project = load_valid_project(tabular_project(str(tmp_path / device / allreduce / precision), n=64, batch=8),
                                 check_datasets=False)
    project.config.device = device
    project.config.precision = precision
    project.multi_gpu.allreduce_precision = allreduce
    return project


def _predicted(project):
    result = predict_project(project, layouts_for(["a:2", "b:2"]),
                             lambda n: make_plan(project, workers=n, dataset_size=64), "1gbit,100us", compute_ms=2)
    return result


@pytest.mark.parametrize("device, allreduce, precision, sent", [
    ("cpu", "half", "float", GRADIENT_BYTES // 2),   # the CPU all-reduce's float16 messages
    ("cpu", "float", "float", GRADIENT_BYTES),
    ("cuda", "half", "float", GRADIENT_BYTES),       # ignored on GPU: 4 bytes a gradient
    ("cuda", "float", "half", GRADIENT_BYTES // 2),  # half gradients: NCCL sends float16
])
def test_the_predictor_counts_what_the_all_reduce_sends(tmp_path, device, allreduce, precision, sent):
    result = _predicted(_project(tmp_path, device, allreduce, precision))
    assert result.gradient_bytes == GRADIENT_BYTES
    assert result.wire_bytes == sent, (device, allreduce, precision)


def test_the_gpu_prediction_says_why_it_counts_float32(tmp_path):
    project = _project(tmp_path, "cuda", "half")
    assert wire_precision(project) == "float" and wire_precision(project, "cpu") == "half"
    result = _predicted(project)
    assert "float32" in result.header() and "not as multi_gpu.allreduce_precision half" in result.header()


def test_the_plan_of_a_gpu_run_refuses_half_messages_with_a_fix(tmp_path):
    project = _project(tmp_path, "cuda", "half")
    plan = make_plan(project, workers=2, dataset_size=64, device="cuda", gpus_available=2)
    [warning] = [w for w in plan.warnings if w.code == "allreduce-half-on-gpu"]
    assert warning.message == GPU_HALF_ALLREDUCE_MESSAGE and "4 bytes" in warning.message
    assert "multi_gpu.allreduce_precision to float" in warning.fix
    assert not [w for w in make_plan(project, workers=2, dataset_size=64, device="cpu").warnings
                if w.code == "allreduce-half-on-gpu"]
    assert not [w for w in make_plan(project, workers=1, dataset_size=64, device="cuda", gpus_available=1).warnings
                if w.code == "allreduce-half-on-gpu"]
