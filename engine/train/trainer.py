"""The trainer: one rank's training run. Builds the graph, reads its shard, trains, all-reduces.

Rank 0 alone writes metrics, checkpoints and models; every rank logs to ``logs/rank<r>.log``.
The same class runs a single-process job and each rank of an ``mpiexec -n N`` job; the process entry
(``run_worker``) is :mod:`nnconsole.engine.train.worker`.
"""
from __future__ import annotations

import json
import math
import os
import time
from typing import Any, Dict, Optional

import numpy as np

from nnconsole.engine.errors import TrainingError
from nnconsole.engine.rundir.protocol import (SYNC_CHECK, TRAIN, VALIDATION, SyncCheckRecord, TrainRecord,
                                              ValidationRecord, warning_record)
from nnconsole.engine.test_seams import pause_until_stop, seam_int
from nnconsole.engine.train import prefetch, rank_sync
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.runtime.checkpoint import (CheckpointState, find_usable_checkpoint, load_checkpoint,
                                                 load_parameters_checked, save_checkpoint)
from nnconsole.engine.project.io import atomic_write
from nnconsole.engine.data.batching import sample_coverage
from nnconsole.engine.data.loading import (DatasetBuildStopped, cache_progress_records, epoch_order, load_datasets,
                                           validation_batches, worker_batches)
from nnconsole.engine.runtime.host_arrays import HostArrays
from nnconsole.engine.rundir.protocol import COMM_WARN_SHARE
from nnconsole.engine.train.rank_process import StopRequest, close_logger, rank_logger
from nnconsole.engine.train.optimizers import all_solvers, build_optimizer_runs, loss_records, step_optimizers
from nnconsole.engine.rundir.launch_options import WorkerOptions
from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.rundir.protocol import PLAN_FILE, RESOLVED_FILE, WORKER, RunStatus

from nnconsole.engine.atomic import write_via
from nnconsole.engine.train.loss_scaling import DynamicLossScaler
from nnconsole.engine.comm.cpu import speed_up_nnabla_accessors
from nnconsole.engine.backend.device import select_device
from nnconsole.engine.runtime.graph import build_graph, lr_multipliers
from nnconsole.engine.runtime.noise import NoiseBuffers
from nnconsole.engine.network.noise_buffers import project_buffers
from nnconsole.engine.runtime.generated_inputs import fill_generated, optimizer_stream
from nnconsole.engine.data.generated import training_slots
from nnconsole.engine.plan.worker_plan import make_plan
from nnconsole.engine.plan.schedule import learning_rate
from nnconsole.engine.runtime.solvers import applies_weight_decay_itself, group_parameters, make_solver
from nnconsole.engine.network.units import expanded_project
from nnconsole.engine.runtime.nnp import export_nnp
from nnconsole.engine.train.simulated import worker_context
from nnconsole.engine.plan.explain import simulation_note


def _save_parameters_atomic(path: str) -> None:
    import nnabla as nn  # deferred: nnabla stays out of the launcher


    write_via(path, lambda tmp: nn.save_parameters(tmp, extension=".h5"))


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


class Trainer:
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
        # (another rank's build could end before rank 0 looked, and go unreported). One all-reduce orders them.
        # A stop request (signal, STOP file) ends a cache build within a second or so, leaving it to be resumed;
        # the ranks agree on it (a rank waiting for its host's build stops with the builder).
        self.stop.install()
        stopped = self.comm.any(False) if self.comm.local_rank != 0 else False
        if not stopped:
            try:
                self.train_set, self.valid_set = load_datasets(
                    self.project, cache_progress_records(self.metrics.write) if self.metrics else None,
                    stop=self.stop.requested)
            except DatasetBuildStopped:
                stopped = True
        if self.comm.local_rank == 0:
            stopped = self.comm.any(stopped)
        if self.comm.any(stopped):
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

    def _resume(self) -> None:
        meta = find_usable_checkpoint(self.run_dir, warn=self.log.warning)
        if meta is None:
            raise TrainingError(f"{self.run_dir}: no usable checkpoint to resume from")
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

    # ---- steps --------------------------------------------------------------------------------
    def _feed(self, graph: Any, dataset: Any, indices: np.ndarray) -> None:
        for name, var in graph.inputs.items():
            fits = tuple(var.shape) == (len(indices),) + dataset.shapes[name]
            # gathered (and normalised) straight into nnabla's input array when shapes match (no .d setter)
            batch = dataset.gather(name, indices, out=self.host.view(var) if fits else None)
            if not fits:  # the column is loaded in another network's shape that fits this one (network.data_flow)
                var.d = batch.reshape(var.shape) if batch.size == var.size else batch

    def _prefetch(self, graph: Any, batches: list) -> Any:
        """The epoch's batches gathered and normalised ahead in a background thread while training runs."""

        if self._ahead is not None:
            self._ahead.close()
        names = list(graph.inputs)
        shapes = self.train_set.shapes
        batch_bytes = 4 * self.plan.per_worker_batch * sum(int(np.prod(shapes[n])) for n in names)
        self._ahead = prefetch.Prefetcher(lambda idx: self.train_set.batch(names, idx), batches,
                                          prefetch.training_depth(batch_bytes), name=f"prefetch-rank{self.rank}")
        return self._ahead

    def _feed_prepared(self, graph: Any, batch: Dict[str, np.ndarray]) -> None:
        for name, var in graph.inputs.items():
            if tuple(var.shape) == batch[name].shape:
                np.copyto(self.host.view(var), batch[name])
            else:
                var.d = batch[name].reshape(var.shape) if batch[name].size == var.size else batch[name]

    def _learning_rate(self) -> float:
        return self._lr_at(self.schedule, self.iteration)

    def _update(self, lr: float, reduced: bool = False) -> None:
        if not reduced:
            self.comm.all_reduce_gradients(self.trainable, average=not self._prescaled)
        if self.loss_scaler and not self.loss_scaler.unscale_or_skip(self.solvers, self.comm, self.log, self.iteration):
            return  # half precision: a rank's gradients overflowed; every rank skips this update
        wd = self._weight_decay
        for (mult, _), solver in zip(self.groups, self.solvers):
            solver.set_learning_rate(lr * mult)
            if wd:
                solver.weight_decay(wd)
            solver.update()

    def _average_persistent_state(self) -> None:
        """Make the running statistics (need_grad=False parameters) every rank's mean (collective).

        Each rank updates them from its own batches; validation, checkpoints and exported models must
        all use one set, the same on every rank.
        """
        if self.comm.size > 1 and self.persistent:
            self.comm.average_persistent(self.persistent)

    def validate(self) -> Dict[str, float]:
        """Exact validation loss and error over the whole set: sums and counts reduced over ranks."""
        import nnabla as nn  # deferred: nnabla stays out of the launcher


        g = self.valid_graph
        B = self.plan.per_worker_batch
        loss_sum = err_sum = count = 0.0
        outputs = [g.sample_loss] + ([g.sample_error] if g.sample_error is not None else [])
        shares = [share for r in self.local_ranks
                  for share in validation_batches(self.valid_set.size, B, r, self.comm.size)]
        for indices, valid in shares:
            self._feed(g, self.valid_set, indices)
            g.fill_noise()
            if g.generated:  # the same values at every validation: keyed by the row, not the epoch
                fill_generated(g.generated, self.project.config.seed, "validation", "validation", 0, indices)
            nn.forward_all(outputs, clear_no_need_grad=True)
            loss_sum += float(np.sum(g.sample_loss.d[:valid]))
            if g.sample_error is not None:
                err_sum += float(np.sum(g.sample_error.d[:valid]))
            count += valid
        total = self.comm.sum([loss_sum, err_sum, count])
        n = max(total[2], 1.0)
        return {"loss": float(total[0] / n), "error": float(total[1] / n), "count": int(total[2])}

    def _checkpoint(self, epoch: int, samples_into_epoch: int, elapsed: float) -> None:
        """Rank 0 saves; every rank calls it (the running statistics are averaged first)."""
        self._average_persistent_state()
        if self.rank != 0:
            return
        state = CheckpointState(iteration=self.iteration, epoch=epoch, samples_into_epoch=samples_into_epoch,
                                samples_seen=self.samples_seen, workers=self.comm.size, elapsed=elapsed,
                                best_validation_error=self.best_error, best_epoch=self.best_epoch)
        save_checkpoint(self.run_dir, state, all_solvers(self))

    # ---- the loop -----------------------------------------------------------------------------
    def run(self) -> RunStatus:
        """Train to the end or to a stop request; returns FINISHED or STOPPED."""
        import nnabla as nn  # deferred: nnabla stays out of the launcher


        cfg = self.project.config
        U = self.plan.update_interval
        B, N = self.plan.per_worker_batch, self.comm.size
        self.log.info("communicator %s", self.comm.name)  # here: on GPU the NCCL one replaced set-up's
        g = self.train_graph
        local = self.local_ranks
        # The training error is a side branch of the loss graph: forward it with the loss (one pass,
        # buffers shared) so that the 'error' of train records is this iteration's, not a stale buffer.
        forward_outputs = {r: [graph.loss] + ([graph.sample_error] if graph.sample_error is not None else [])
                           for r, graph in self.train_graphs.items()}
        iters_per_epoch = self.plan.iterations_per_epoch
        total_iters = iters_per_epoch * cfg.max_epoch
        started = time.perf_counter()
        start_iteration = self.iteration
        accumulated = 0
        window = {"loss": 0.0, "error": 0.0, "n": 0, "t": time.perf_counter(), "comm": self.comm.allreduce_seconds,
                  "wait": 0.0}
        warned_comm = False
        # The all-reduce runs inside backward: on GPU with a fresh nnabla callback per reducing backward, on
        # CPU (multi_gpu.allreduce_overlap) bucket by bucket on a communication thread.
        self.overlap = N > 1 and self.comm.overlaps_backward
        self.loss_scaler = _loss_scaler(self.device)
        # On CPU the 1/N of the gradient mean is applied by backward (with the 1/U of accumulation),
        # and the all-reduce only sums: one pass less over every gradient. Exact for N = 2, 4, 8...
        self._prescaled = N > 1 and getattr(self.comm, "sums_prescaled_gradients", False)
        grad_scale = 1.0 / (U * N) if self._prescaled else 1.0 / U
        self.stop.install()
        fail_at = seam_int("fail_at_iteration")  # tests only (nnconsole.engine.test_seams)
        pause_at = seam_int("pause_at_iteration")  # tests only: never again in a run resumed at or past it
        for epoch in range(self.start_epoch, cfg.max_epoch):
            order = epoch_order(self.train_set.size, cfg.seed, epoch, self.project.datasets.shuffle)
            shares = {r: worker_batches(order, B, r, N) for r in local}
            batches = shares[local[0]]
            first = self.samples_into_epoch // (B * N) if epoch == self.start_epoch else 0
            ahead = self._prefetch(g, [shares[r][k] for k in range(first, len(batches)) for r in local])
            for k in range(first, len(batches)):
                if pause_at is not None and self.iteration == pause_at > start_iteration:
                    pause_until_stop(self.stop.requested)
                if fail_at is not None and self.iteration == fail_at and self.rank == (seam_int("fail_rank") or 0):
                    raise RuntimeError(f"deliberate failure at iteration {self.iteration} (test seam)")
                if accumulated == 0:
                    for solver in self.solvers:
                        solver.zero_grad()
                reduce_now = self.overlap and accumulated == U - 1
                for r in local:  # this rank, or each simulated worker in turn (its micro-batch, its graph)
                    graph = self.train_graphs[r]
                    waited = time.perf_counter()  # data wait: taking the prepared batch and feeding it
                    self._feed_prepared(graph, next(ahead))
                    window["wait"] += time.perf_counter() - waited
                    if graph.generated:  # NNC's Generator inputs (a GAN's z, constant targets): this worker's rows
                        fill_generated(graph.generated, cfg.seed, optimizer_stream(0), "train", epoch,
                                       training_slots(k, B, r, N))
                    graph.fill_noise()
                    with worker_context(self.comm, r):  # a simulated worker's own running statistics
                        nn.forward_all(forward_outputs[r], clear_no_need_grad=True)
                    loss_scale = self.loss_scaler.scale if self.loss_scaler else 1.0
                    self.comm.backward(graph.loss, grad_scale * loss_scale, self.trainable, reduce=reduce_now,
                                       average=not self._prescaled)
                    loss_value = float(self.host.view(graph.loss))
                    if not math.isfinite(loss_value):
                        raise TrainingError(
                            f"training loss became {loss_value} at epoch {epoch + 1}, iteration {self.iteration}; "
                            "lower optimizer.learning_rate or check the data. The last good checkpoint is kept.")
                    # the mean over this process's workers: summed over ranks and divided by the iterations,
                    # it is the mean over all N workers in a simulated run as in a real one
                    window["loss"] += loss_value / len(local)
                    window["error"] += (float(self.host.view(graph.sample_error).mean()) / len(local)
                                        if graph.sample_error is not None else 0.0)
                window["n"] += 1  # iterations in this monitor window
                accumulated += 1
                self.iteration += 1
                self.samples_seen += B * N
                boundary = accumulated == U
                if boundary:
                    self._update(self._learning_rate(), reduced=reduce_now)
                    accumulated = 0
                if self.extra_optimizers:  # the project's other optimizers, in order, as nnabla_cli does
                    step_optimizers(self, self.extra_optimizers, self.iteration - 1, epoch, k,
                                    {r: shares[r][k] for r in local})
                if self.iteration % cfg.log_interval == 0 or k == len(batches) - 1:
                    warned_comm = self._record_training(window, epoch, k + 1, len(batches), started,
                                                        start_iteration, total_iters, warned_comm)
                if boundary and (self.comm.any(self.stop.requested()) if N > 1 else self.stop.requested()):
                    done = (k + 1) * B * N
                    self._checkpoint(epoch, done, self._elapsed(started))
                    if self.rank == 0:  # where the run stopped, for the history and the GUI (not the last epoch's)
                        runs.update_status(self.run_dir, WORKER, iteration=self.iteration)
                    self.log.info("stopped at epoch %d, iteration %d; checkpoint written", epoch + 1,
                                  self.iteration)
                    return RunStatus.STOPPED
            self.samples_into_epoch = 0
            coverage = (sample_coverage(self.comm, self.train_set.size, [b for r in local for b in shares[r]])
                        if first == 0 else None)
            self._end_epoch(epoch, started, coverage)
            # samples/s and the all-reduce share describe training iterations: validation and
            # checkpoints are left out of the next window.
            window.update(t=time.perf_counter(), comm=self.comm.allreduce_seconds, wait=0.0)
        self._finish()
        return RunStatus.FINISHED

    def _elapsed(self, started: float) -> float:
        return self.elapsed_before + time.perf_counter() - started

    def _record_training(self, window: Dict[str, float], epoch: int, k: int, n_batches: int, started: float,
                         start_iteration: int, total_iters: int, warned_comm: bool) -> bool:
        sums = self.comm.sum([window["loss"], window["error"], window["n"], window["wait"], 1.0])
        now = time.perf_counter()
        span = max(now - window["t"], 1e-9)
        comm_time = self.comm.allreduce_seconds - window["comm"]
        share = comm_time / span
        done_here = self.iteration - start_iteration
        elapsed = self._elapsed(started)
        eta = (now - started) / max(done_here, 1) * max(total_iters - self.iteration, 0)
        record = TrainRecord(
            type=TRAIN, iteration=self.iteration, epoch=epoch + k / n_batches,
            samples=self.samples_seen, loss=float(sums[0] / max(sums[2], 1)),
            error=float(sums[1] / max(sums[2], 1)),
            lr=self._learning_rate(), samples_per_s=window["n"] * self.plan.per_worker_batch
            * self.comm.size / span, time_per_iter=span / max(window["n"], 1),
            allreduce_share=share, data_wait_share=float(sums[3] / max(sums[4], 1.0) / span), elapsed=elapsed,
            eta=eta, total_iterations=total_iters,
        )
        extra = loss_records(self, self.extra_optimizers, record["epoch"])  # collective: before the rank test
        if self.metrics:
            for written in [record, *extra]:
                self.metrics.write(written)
        if self.comm.size > 1 and share > COMM_WARN_SHARE and not warned_comm and self.iteration > 2 * (
                self.project.config.log_interval):
            self.warn(f"all-reduce takes {share:.0%} of each iteration: communication dominates. Use a larger "
                      "batch per worker, fewer workers, or a faster interconnect.")
            warned_comm = True
        window.update(loss=0.0, error=0.0, n=0, t=now, comm=self.comm.allreduce_seconds, wait=0.0)
        return warned_comm

    def _end_epoch(self, epoch: int, started: float, coverage: Optional[Dict[str, int]] = None) -> None:
        cfg = self.project.config
        if (epoch + 1) % cfg.validation_interval and epoch + 1 < cfg.max_epoch:  # validate every N epochs and last
            if self.rank == 0:
                runs.update_status(self.run_dir, WORKER, epoch=epoch + 1, iteration=self.iteration)
            self._checkpoint(epoch + 1, 0, self._elapsed(started))
            return
        self._average_persistent_state()
        result = self.validate()
        if not math.isfinite(result["loss"]):
            raise TrainingError(
                f"validation loss became {result['loss']} after epoch {epoch + 1}; lower optimizer.learning_rate "
                "or check the validation data. The last good checkpoint is kept.")
        improved = self.best_error is None or result["error"] < self.best_error
        if improved:
            self.best_error, self.best_epoch = result["error"], epoch + 1
        elapsed = self._elapsed(started)
        if self.rank == 0:
            if improved and self.project.config.save_best:
                _save_parameters_atomic(os.path.join(self.run_dir, "parameters_best.h5"))
            self.metrics.write(ValidationRecord(type=VALIDATION, epoch=epoch + 1, iteration=self.iteration,
                                                loss=result["loss"], error=result["error"], count=result["count"],
                                                best=improved, elapsed=elapsed, **(coverage or {})))
            self.log.info("epoch %d/%d: validation loss %.5f error %.4f%s", epoch + 1,
                          self.project.config.max_epoch, result["loss"], result["error"],
                          " (best)" if improved else "")
            runs.update_status(self.run_dir, WORKER, epoch=epoch + 1, iteration=self.iteration,
                               best_validation_error=self.best_error, best_epoch=self.best_epoch,
                               final_validation_error=result["error"])
        self._checkpoint(epoch + 1, 0, elapsed)

    def _sync_check(self) -> None:
        """Check that every rank ends with bit-identical parameters, record it, and fail the run if not.

        Collective. Raises TrainingError on every rank when they differ, naming the parameters and
        the largest difference, so that such a run never counts as finished.
        """
        low, high = rank_sync.crc_range(self.comm, self.params)
        identical = low == high
        record = SyncCheckRecord(type=SYNC_CHECK, iteration=self.iteration, workers=self.comm.size,
                                 identical=identical, crc32_min=int(low), crc32_max=int(high))
        message = ""
        if not identical:
            differing = rank_sync.parameter_spread(self.comm, self.params)
            record["differing"] = [{"parameter": name, "max_abs_difference": spread} for name, spread in differing]
            message = rank_sync.divergence_report(differing, len(self.params))
            self.log.error("%s (CRC %d vs %d)", message, low, high)
        if self.metrics:
            self.metrics.write(record)
        if not identical:
            raise TrainingError(message)

    def _finish(self) -> None:
        self._average_persistent_state()
        if rank_sync.perturb_for_test(self.rank, self.params):
            self.log.warning("test: this rank's parameters were perturbed before the end-of-run check")
        self._sync_check()
        if self.rank != 0:
            return

        _save_parameters_atomic(os.path.join(self.run_dir, "parameters_final.h5"))
        export_nnp(self.project, os.path.join(self.run_dir, "parameters_final.h5"),
                   os.path.join(self.run_dir, "model_final.nnp"))
        best = os.path.join(self.run_dir, "parameters_best.h5")
        if os.path.isfile(best):
            export_nnp(self.project, best, os.path.join(self.run_dir, "model_best.nnp"))

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


def _loss_scaler(device: Any) -> Any:
    """Dynamic loss scaling for half precision (engine/train/loss_scaling.py); None in float."""

    return DynamicLossScaler() if getattr(device, "type_config", "float") == "half" else None

