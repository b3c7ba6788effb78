"""One rank's training: the process entry (``worker``: ``python -m nnconsole.engine.train.worker RUN_DIR``),
the trainer's set-up (``trainer``), its loop over epochs and iterations (``epoch_loop``) and the end of each
epoch and of the run: validation, checkpoints, the end-of-run check (``epoch_end``), the optimizers after the
first (``optimizers``), loss scaling (``loss_scaling``), identical ranks (``rank_sync``), N workers simulated
exactly in one process (``simulated``), batches prepared ahead (``prefetch``) and the stop request and logs
(``rank_process``). Runs in worker processes only.
"""
