"""The training loop of one rank: every epoch's iterations, updates and training records.

``EpochLoop.run`` is the loop itself: feed each worker's micro-batch (this rank's, or every simulated
worker's in turn), forward, backward with the all-reduce, update at each accumulation boundary, step the
project's other optimizers, write the monitor window's train record, and stop at a boundary when asked.
The end of each epoch (validation, checkpoints, the end-of-run check) is :mod:`.epoch_end`; the state the
loop works on is built by ``Trainer.setup`` (:mod:`.trainer`), which combines the two.
"""
from __future__ import annotations

import math
import time
from typing import Any, Dict

import numpy as np

from nnconsole.engine.errors import TrainingError
from nnconsole.engine.rundir.protocol import COMM_WARN_SHARE, TRAIN, WORKER, RunStatus, TrainRecord
from nnconsole.engine.test_seams import pause_until_stop, seam_int
from nnconsole.engine.train import prefetch
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.data import on_the_fly
from nnconsole.engine.data.batching import sample_coverage
from nnconsole.engine.data.loading import epoch_order, worker_batches
from nnconsole.engine.train.optimizers import loss_records, step_optimizers
from nnconsole.engine.train.loss_scaling import DynamicLossScaler
from nnconsole.engine.runtime.generated_inputs import fill_generated, optimizer_stream
from nnconsole.engine.data.generated import training_slots
from nnconsole.engine.train.simulated import worker_context


class EpochLoop:
    """The loop's steps, mixed into ``Trainer`` (the attributes they use are set by ``Trainer.setup``)."""

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

    # ---- steps --------------------------------------------------------------------------------
    def _prefetch(self, graph: Any, batches: list) -> Any:
        """The epoch's batches gathered and normalised ahead in a background thread while training runs."""

        if self._ahead is not None:
            self._ahead.close()
        names = list(graph.inputs)
        shapes = self.train_set.shapes
        batch_bytes = 4 * self.plan.per_worker_batch * sum(int(np.prod(shapes[n])) for n in names)
        self._ahead = prefetch.Prefetcher(lambda idx: self.train_set.batch(names, idx), batches,
                                          prefetch.training_depth(batch_bytes), name=f"prefetch-rank{self.rank}",
                                          start=lambda idx: self.train_set.start(names, idx),
                                          ahead=on_the_fly.DECODE_AHEAD)
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


def _loss_scaler(device: Any) -> Any:
    """Dynamic loss scaling for half precision (engine/train/loss_scaling.py); None in float."""

    return DynamicLossScaler() if getattr(device, "type_config", "float") == "half" else None

