"""nnabla's files (``.nntxt``, ``.protobuf``, ``.nnp``): read (``reader``), the network as graph nodes
(``network``), the optimizer and schedule (``settings``), the whole import (``importer``), the export
(``exporter``, one network, solver and optimizer at a time in ``writers``; the other optimizers, both ways, in
``optimizers``) and repeat/recurrent blocks as nnabla writes them
(``repeat``, ``recurrent``).
"""
