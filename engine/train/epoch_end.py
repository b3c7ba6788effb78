"""The end of an epoch and of the run on one rank: validation, checkpoints, running statistics, final check.

After each epoch the trainer validates (every ``validation_interval`` epochs and after the last), records
the result and the best parameters, and checkpoints; at the end of the run it averages the running
statistics, checks that every rank holds bit-identical parameters and exports the final model. All of it is
collective (every rank calls it); rank 0 alone writes. Mixed into ``Trainer`` (:mod:`.trainer`).
"""
from __future__ import annotations

import math
import os
from typing import Any, Dict, Optional

import numpy as np

from nnconsole.engine.atomic import write_via
from nnconsole.engine.errors import TrainingError
from nnconsole.engine.rundir.protocol import SYNC_CHECK, VALIDATION, WORKER, SyncCheckRecord, ValidationRecord
from nnconsole.engine.train import rank_sync
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.runtime.checkpoint import CheckpointState, save_checkpoint
from nnconsole.engine.data.loading import validation_batches
from nnconsole.engine.train.optimizers import all_solvers
from nnconsole.engine.runtime.generated_inputs import fill_generated
from nnconsole.engine.runtime.nnp import export_nnp


def _save_parameters_atomic(path: str) -> None:
    """The parameters saved to ``path`` (.h5) through a temporary file: a reader never sees half a file."""
    import nnabla as nn  # deferred: nnabla stays out of the launcher


    write_via(path, lambda tmp: nn.save_parameters(tmp, extension=".h5"))


class EpochEnd:
    """Validation, checkpoints and the end of the run, mixed into ``Trainer`` (state from ``Trainer.setup``)."""

    def _feed(self, graph: Any, dataset: Any, indices: np.ndarray) -> None:
        for name, var in graph.inputs.items():
            fits = tuple(var.shape) == (len(indices),) + dataset.shapes[name]
            # gathered (and normalised) straight into nnabla's input array when shapes match (no .d setter)
            batch = dataset.gather(name, indices, out=self.host.view(var) if fits else None)
            if not fits:  # the column is loaded in another network's shape that fits this one (network.data_flow)
                var.d = batch.reshape(var.shape) if batch.size == var.size else batch

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
