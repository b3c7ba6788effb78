"""The trainer: one rank's training run. Builds the graph, reads its shard, trains, all-reduces.

Rank 0 alone writes metrics, checkpoints and models; every rank logs to ``logs/rank<r>.log``.
The same class runs a single-process job and each rank of an ``mpiexec -n N`` job; the process entry
(``run_worker``) is :mod:`nnconsole.engine.train.worker`. This module is the run's set-up (device, datasets,
plan, graphs, solvers, resume); the loop is :mod:`.epoch_loop` and the end of each epoch and of the run
:mod:`.epoch_end`, both mixed into ``Trainer``.
"""
from __future__ import annotations

import json
import os
from typing import Any, Optional

import numpy as np

from nnconsole.engine.errors import TrainingError
from nnconsole.engine.rundir.protocol import warning_record
from nnconsole.engine.train import rank_sync
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.runtime.checkpoint import (find_usable_checkpoint, load_checkpoint, load_parameters_checked,
                                                 read_checkpoint)
from nnconsole.engine.project.io import atomic_write
from nnconsole.engine.data.loading import DatasetBuildStopped, building_note, cache_progress_records, load_datasets
from nnconsole.engine.runtime.host_arrays import HostArrays
from nnconsole.engine.train.rank_process import StopRequest, close_logger, rank_logger
from nnconsole.engine.train.optimizers import all_solvers, build_optimizer_runs
from nnconsole.engine.rundir.launch_options import WorkerOptions
from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.rundir.protocol import PLAN_FILE, RESOLVED_FILE
from nnconsole.engine.comm.cpu import speed_up_nnabla_accessors
from nnconsole.engine.backend.device import select_device
from nnconsole.engine.runtime.graph import build_graph, lr_multipliers
from nnconsole.engine.runtime.noise import NoiseBuffers
from nnconsole.engine.network.noise_buffers import project_buffers
from nnconsole.engine.plan.worker_plan import make_plan
from nnconsole.engine.plan.schedule import learning_rate
from nnconsole.engine.runtime.solvers import applies_weight_decay_itself, group_parameters, make_solver
from nnconsole.engine.network.units import expanded_project
from nnconsole.engine.plan.explain import simulation_note
from nnconsole.engine.train.epoch_end import EpochEnd
from nnconsole.engine.train.epoch_loop import EpochLoop


class LiveComm:
    """The trainer's communicator at the time of each call, for layers built before it is replaced.

    Synchronized BatchNormalization layers keep the communicator they were built with; on GPU the NCCL
    communicator replaces the CPU one after set-up, and their host round trips must count in ITS
    all-reduce time (the share the run reports), not in the discarded one's.
    """

    def __init__(self, trainer: "Trainer") -> None:
        self._trainer = trainer

    @property
    def size(self) -> int:
        return self._trainer.comm.size

    def sum_array(self, values: np.ndarray) -> np.ndarray:
        return self._trainer.comm.sum_array(values)


class Trainer(EpochLoop, EpochEnd):
    """State and steps of one rank's training run."""

    def __init__(self, run_dir: str, comm: Any, options: WorkerOptions) -> None:
        self.run_dir = run_dir
        self.comm = comm
        self.options = options
        self.rank = comm.rank
        self.log = rank_logger(run_dir, comm.rank)
        self.metrics = runs.MetricsWriter(run_dir) if self.rank == 0 else None
        self.stop = StopRequest(run_dir)
        self._ahead: Any = None  # the epoch's batches prepared ahead (engine/train/prefetch.py)

    # ---- set-up -------------------------------------------------------------------------------
    def setup(self, device_choice: Any = None, project: Any = None) -> None:
        """Build everything a run needs; ``project`` is the run's resolved project when already loaded."""
        import nnabla as nn  # deferred: nnabla stays out of the launcher

        from nnconsole.engine.layers.sync_batchnorm import across_workers

        speed_up_nnabla_accessors()
        self.host = HostArrays()

        # Units run as their networks' layers (the run's project file keeps them as units)
        self.project = expanded_project(project or load_valid_project(os.path.join(self.run_dir, RESOLVED_FILE), check_datasets=False))
        cfg = self.project.config
        if self.options.max_epoch:
            cfg.max_epoch = int(self.options.max_epoch)
        self.device = device_choice or select_device(self.options.device or cfg.device, cfg.precision,
                                                     self.comm.local_rank)
        self.log.info("device: %s; rank %d of %d (local rank %d)", self.device.description,
                      self.rank, self.comm.size, self.comm.local_rank)
        # Each host's first rank loads (and, when needed, builds the shared cache) before the host's other
        # ranks, which then only open it: rank 0 always sees and records a build of this run as run records
        # (another rank's build could end before rank 0 looked, and go unreported). One all-reduce orders them,
        # waited for asleep (any_sleeping): a blocking MPI call would spin a core per waiting rank (issue 31).
        # A stop request (signal, STOP file) ends a cache build within a second or so, leaving it to be resumed;
        # the ranks agree on it (a rank waiting for its host's build stops with the builder).
        # A training set's build goes on while the first epoch trains (build_overlap): its batches wait only for
        # their own files, decoded in the order the run first needs them; the validation set's is queued behind it
        # (the first validation waits for its files). A host's other ranks follow those builds the same way, chunk
        # by chunk, from the builder's progress record (build_follow), instead of waiting for the whole entries.
        # A resumed run's build decodes from the epoch and position it resumes at (read from its checkpoint here,
        # before the datasets load; _resume loads the same checkpoint once the graphs exist).
        self._resume_from = self._usable_checkpoint() if self.options.resume else None
        state = read_checkpoint(self._resume_from, verify=False) if self._resume_from else None
        start = (state.epoch, state.samples_into_epoch) if state else (0, 0)
        self.stop.install()
        stopped = self.comm.any_sleeping(False) if self.comm.local_rank != 0 else False
        if not stopped:
            try:
                self.train_set, self.valid_set = load_datasets(
                    self.project, cache_progress_records(self.metrics.write) if self.metrics else None,
                    stop=self.stop.requested, overlap=True, start=start)
            except DatasetBuildStopped:
                stopped = True
            else:
                for which, dataset in (("training", self.train_set), ("validation", self.valid_set)):
                    note = building_note(dataset)
                    if note is not None:
                        self.log.info("%s set: %s", which, note)
        if self.comm.local_rank == 0:
            stopped = self.comm.any_sleeping(stopped)
        if self.comm.any_sleeping(stopped):
            raise DatasetBuildStopped("stopped while the dataset cache was being built; the build resumes where it "
                                      "stopped when training starts again")
        self.plan = make_plan(self.project, workers=self.comm.size, dataset_size=self.train_set.size,
                              device=self.device.backend)
        np.random.seed(cfg.seed)
        nn.seed(cfg.seed)
        nn.clear_parameters()
        # The workers this process trains: its rank, or every simulated worker (engine/train/simulated.py),
        # each with its own training graph (random layers seeded by its rank) and VATNoise buffers.
        self.local_ranks = list(getattr(self.comm, "simulated_ranks", (self.rank,)))
        if len(self.local_ranks) > 1:
            self.plan.simulated = True
            self.plan.notes.insert(0, simulation_note(self.comm.size, self.comm.size // len(self.local_ranks)))
        # VATNoise buffers: one variable per name, shared by every network of the run (runtime.noise)
        self.noises = {r: NoiseBuffers(project_buffers(self.project), seed=cfg.seed, rank=r) for r in self.local_ranks}
        self.noise = self.noises[self.local_ranks[0]]
        B = self.plan.per_worker_batch
        self.graph_comm = LiveComm(self)
        self.train_graphs = {}
        with across_workers(self.graph_comm):  # synchronized BatchNormalization layers reduce through it
            # random layers (Dropout, augmentation) draw per-worker numbers from the run's seed
            for r in self.local_ranks:
                self.train_graphs[r] = build_graph(self.project.network, B, "train", seed=cfg.seed, rank=r,
                                                   noise=self.noises[r])
        self.train_graph = self.train_graphs[self.local_ranks[0]]
        self.valid_graph = build_graph(self.project.network, B, "validation", seed=cfg.seed, rank=self.rank,
                                       noise=self.noise)
        self.extra_optimizers = build_optimizer_runs(self) if self.project.optimizers else []
        if cfg.initial_parameters:  # e.g. the weights of an imported .nnp
            load_parameters_checked(cfg.initial_parameters, nn.get_parameters(grad_only=False), allow_missing=True)
            self.log.info("initial parameters loaded from %s", cfg.initial_parameters)
        self.params = nn.get_parameters(grad_only=False)
        self.persistent = rank_sync.persistent_state(self.params)
        self.comm.broadcast_parameters(self.params)
        multipliers = lr_multipliers(self.project.network, self.train_graph)
        learned = nn.get_parameters(grad_only=True)
        if self.extra_optimizers:  # the weights of the other networks only are their optimizers'
            learned = {name: var for name, var in learned.items() if name in self.train_graph.parameters}
        self.groups = group_parameters(learned, multipliers)
        self.solvers = []
        for mult, group in self.groups:
            solver = make_solver(self.project.optimizer, self.plan.effective_lr * mult)
            solver.set_parameters(group)
            self.solvers.append(solver)
        self.trainable = [p for _, group in self.groups for p in group.values()]
        self.schedule = self.plan.schedule_params()
        self._lr_at = learning_rate
        self._prescaled = False
        wd = self.project.optimizer.weight_decay
        self._weight_decay = wd if wd and not applies_weight_decay_itself(self.project.optimizer) else 0.0
        self.iteration = 0
        self.samples_seen = 0
        self.start_epoch = 0
        self.samples_into_epoch = 0
        self.elapsed_before = 0.0
        self.best_error: Optional[float] = None
        self.best_epoch: Optional[int] = None
        if self.options.resume:
            self._resume()
        if hasattr(self.comm, "bind_persistent"):  # each simulated worker starts from these running statistics
            self.comm.bind_persistent(self.persistent)
        if self.rank == 0:
            atomic_write(os.path.join(self.run_dir, PLAN_FILE),
                         json.dumps(self.plan.to_dict(), indent=2).encode())
            for note in self.plan.notes:
                self.log.info("plan: %s", note)
            for warning in self.plan.warnings:
                self.log.warning("plan: %s", getattr(warning, "message", warning))

    def _usable_checkpoint(self) -> str:
        """The checkpoint a resumed run starts from (the newest whose files verify)."""
        meta = find_usable_checkpoint(self.run_dir, warn=self.log.warning)
        if meta is None:
            raise TrainingError(f"{self.run_dir}: no usable checkpoint to resume from")
        return meta

    def _resume(self) -> None:
        meta = self._resume_from
        state = load_checkpoint(meta, all_solvers(self))
        self.comm.broadcast_parameters(self.params)
        B, N = self.plan.per_worker_batch, self.comm.size
        self.start_epoch = state.epoch
        self.samples_into_epoch = state.samples_into_epoch
        self.samples_seen = state.samples_seen
        self.iteration = state.iteration if state.workers == N else int(round(state.samples_seen / (B * N)))
        self.elapsed_before = state.elapsed
        self.best_error, self.best_epoch = state.best_validation_error, state.best_epoch
        self.log.info("resumed from %s: epoch %d, iteration %d (was %d workers, now %d)", meta, state.epoch,
                      self.iteration, state.workers, N)

    def warn(self, message: str) -> None:
        """A warning in this rank's log and (rank 0) in metrics.jsonl, where the console shows it."""
        self.log.warning(message)
        if self.metrics:
            self.metrics.write(warning_record(message, getattr(self, "iteration", 0)))

    def close(self) -> None:
        if self._ahead is not None:
            self._ahead.close()
        if self.metrics:
            self.metrics.close()
        close_logger(self.log)

