"""How workers average gradients: the CPU all-reduce through mpi4py (``cpu``), with float16 messages
(``half``) and overlapped with backward (``overlap``) and the GPU communicator on NCCL (``nccl``). Runs in worker
processes only.
"""
