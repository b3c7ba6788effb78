"""The network as a graph of layers, in pure Python: shape, parameter and cost inference (``shapes``), repeat
blocks (``repeat_blocks``), NNC's Unit layers expanded (``units``) with the values of their networks' Arguments
(``arguments``: ``*Name`` macros, parameter-property arguments, repeat counts by name), the size of both expansions counted before anything is built
(``expansion_size``), recurrent blocks unrolled over time
(``recurrent_units``, ``recurrent_unroll``), parameter scopes shared between layers (``shared_params``), which
networks each dataset feeds (``data_flow``: each network has its own variables), the VATNoise noise buffers Inputs
read instead of a dataset column (``noise_buffers``), the ``nnconsole info`` layer tables (``layer_table``) and the
layered layout the EDIT canvas and the importers place layers with (``layered_layout``, its coordinates in
``layered_coords``). Built on the layer registry; never imports nnabla.
"""
