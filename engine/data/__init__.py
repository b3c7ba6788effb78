"""Datasets: NNC's CSV files read with located errors (``csv_reader``), variables decoded into arrays
(``decode``, ``matrix``), the shared decode cache and its parallel build (``cache``, ``cache_build``,
``decode_process``), the training entry points (``loading``), sample order and batches (``batching``) and class
labels (``labels``); ``create/`` makes a dataset from folders of images (``nnconsole dataset create``). numpy and
Pillow only, no nnabla.
"""
