"""A trained run applied to data: evaluation on a dataset CSV with NNC's metrics (``evaluation``) and
inference on new data or images (``inference``). Runs in ``nnconsole evaluate``/``infer`` subprocesses.
"""
