"""One rank's training: the process entry (``worker``: ``python -m nnconsole.engine.train.worker RUN_DIR``),
the trainer (``trainer``), the optimizers after the first (``optimizers``), loss scaling (``loss_scaling``),
identical ranks (``rank_sync``), N workers simulated exactly in one process (``simulated``), batches prepared ahead (``prefetch``) and the stop request and logs
(``rank_process``). Runs in worker processes only.
"""
