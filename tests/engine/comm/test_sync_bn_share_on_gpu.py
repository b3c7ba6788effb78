"""Synchronized BatchNormalization's round trips count in the GPU run's all-reduce share (issue 27 item 6).

Its layers keep the communicator they were built with; on GPU the NCCL communicator replaces set-up's
CPU one afterwards (``run_worker``), and the trainer reports the replacement's ``allreduce_seconds``. The
real ``Trainer.setup`` builds a synchronized BatchNormalization project here with a two-rank stand-in
communicator (one process), which is then replaced as on GPU; a forward and backward of the training graph
must go through the replacement, 4 round trips per layer per step (2 means, forward and backward).
"""
from __future__ import annotations

import numpy as np

from nnconsole.engine.backend.device import select_device
from nnconsole.engine.comm.cpu import SingleComm
from nnconsole.engine.launch.launcher import LaunchRequest, prepare_run
from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.rundir.launch_options import WorkerOptions
from nnconsole.engine.train.trainer import Trainer
from tests.support.projects import bn_project


class TwoRanks(SingleComm):
    """Rank 0 of two whose partner holds the same numbers: sums are twice this rank's values."""

    size = 2
    name = "two-rank stand-in"

    def __init__(self, label: str) -> None:
        super().__init__()
        self.label, self.round_trips = label, 0

    def sum(self, values):
        return 2 * np.asarray(values, dtype=np.float64)

    def sum_array(self, values):
        self.round_trips += 1
        self.allreduce_seconds += 0.001
        return 2 * np.asarray(values, dtype=np.float32)


def test_sync_bn_round_trips_go_through_the_communicator_that_replaced_setups(tmp_path):
    import nnabla as nn

    path = bn_project(str(tmp_path / "p"), sync=True, n=32, batch=8, epochs=1, workers=2)
    project = load_valid_project(path)
    run_dir = prepare_run(project, LaunchRequest(project_path=path, output=str(tmp_path / "out")), 2)
    setup_comm, gpu_comm = TwoRanks("set-up"), TwoRanks("replacement")
    trainer = Trainer(run_dir, setup_comm, WorkerOptions(workers=2))
    try:
        trainer.setup(select_device("cpu"), project)
        trainer.comm = gpu_comm  # what run_worker does on GPU: NcclGpuComm from here on
        built_with = setup_comm.round_trips
        g = trainer.train_graph
        for var in g.inputs.values():
            var.d = np.random.RandomState(0).rand(*var.shape) if var.shape[-1] != 1 else 0
        nn.forward_all([g.loss])
        g.loss.backward(1.0, clear_buffer=True)
    finally:
        trainer.close()
        nn.clear_parameters()
    assert setup_comm.round_trips == built_with  # nothing reached the discarded communicator
    assert gpu_comm.round_trips == 4, gpu_comm.round_trips  # one layer: 2 in forward, 2 in backward
    assert gpu_comm.allreduce_seconds > 0
