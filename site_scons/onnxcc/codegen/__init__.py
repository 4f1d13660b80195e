"""Generate stage: graph + plan -> C sources of the canonical API (see DESIGN.md).

Three files with three sets of inputs, so each is regenerated only when its inputs change:
``<name>.h``/``<name>.c`` (graph structure + plan), ``<name>_kernels.c``/``.h`` (graph
structure + the kernel templates it uses), ``<name>_weights.S`` + ``.bin`` (or
``<name>_weights.c``: graph + weight values).
"""
