"""The compute backend of a process: choosing CPU or CUDA (``device``), making nnabla-ext-cuda's libraries
findable (``gpu_libs``), MPI helpers every rank needs before a communicator exists (``mpi``) and every rank
agreeing on the backend (``agreement``). Imports nnabla only inside the functions the workers call.
"""
