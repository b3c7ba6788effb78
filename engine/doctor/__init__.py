"""``nnconsole doctor``: a step-by-step check of the multi-worker chain (``checks``) and of the GPU
libraries, driver and NCCL (``gpu_checks``), each step's outcome a ``Check`` (``outcome``) with its fix.
"""
