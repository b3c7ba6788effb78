"""nnabla's files (``.nntxt``, ``.protobuf``, ``.nnp``): read (``reader``), the network as graph nodes
(``network``), the optimizer and schedule (``settings``), the whole import (``importer``), the export
(``exporter``, with the other optimizers in ``optimizers``) and repeat/recurrent blocks as nnabla writes them
(``repeat``, ``recurrent``).
"""
