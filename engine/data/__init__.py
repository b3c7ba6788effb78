"""Datasets: NNC's CSV files read with located errors (``csv_reader``; streamed in chunks by ``csv_stream``) into a
host-level index of memory-mapped columns (``index``, ``index_store``: row-to-file indices, numeric columns, the
distinct files), opened or built once per host (``dataset_entry``; the build goes on behind training,
``build_overlap``, and the host's other processes follow it chunk by chunk, ``build_follow``) or decoded per
batch over the cache's disk budget (``on_the_fly``, by the decode processes into shared memory: ``decode_pool``);
variables decoded into arrays
(``decode``, ``matrix``) by the one image reader (``image_file``: supported formats only, bit depth handled)
and regular files only (``regular_file``), the shared decode cache, its build folders and its parallel build
(``cache``, ``cache_partial``, ``cache_build``, ``decode_process``), the training entry points (``loading``),
sample order and batches (``batching``), the values of generated inputs (``generated``: NNC's Generator) and class labels (``labels``); ``create/`` makes a dataset from folders
of images (``nnconsole dataset create``). numpy and Pillow only, no nnabla.
"""
