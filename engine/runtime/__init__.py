"""nnabla graphs and files for a run: the computation graph of a project network (``graph``) and the filling of
its generated inputs (``generated_inputs``), solvers per learning-rate group (``solvers``), the VATNoise noise
buffers shared by a run's graphs (``noise``), checkpoints (``checkpoint``), the runtime ``.nnp`` of a trained run
(``nnp``, every network of the project) and host-memory views of nnabla arrays (``host_arrays``).
"""
