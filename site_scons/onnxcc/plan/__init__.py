"""Static memory planning: where every tensor and every kernel's scratch lives.

The plan stage (``plan/stage.py``) runs these steps, each a module of this package:

* ``schedule``: the order of the nodes (memory-aware by default);
* ``forwarding``: which tensors share memory: views (the reshape family), concat inputs
  written straight into their slice of the output, kernels that write over an input
  that dies at them;
* ``liveness``: the buffers that result, each with its bytes at every step it is live;
* ``problem`` and ``algorithms``: the placement problem (buffers -> offsets) and the
  algorithms that solve it; ``pools``: several memories, filled in order.
"""
