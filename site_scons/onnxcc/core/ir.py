"""The compiler's graph: a list of nodes over named tensors, small enough to print.

Every tensor carries (dtype, shape, quantization) from import on, so later stages (the
memory planner, the code generator, the size report) always count real bytes. Constant
tensors (weights) keep their values in ``Graph.constants``; a graph loaded for structure
only (the planner's view) has their ``TensorInfo`` but no values.
"""

import functools
import math
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class TensorInfo:
    name: str
    dtype: str  # numpy dtype name: 'float32', 'int64', ...
    shape: tuple
    quant: dict = None  # reserved for int8: {'scale': ..., 'zero_point': ..., 'axis': ...}

    @property
    def size(self):
        return int(math.prod(self.shape))

    @property
    def nbytes(self):
        return self.size * itemsize(self.dtype)


@functools.cache
def itemsize(dtype):
    """Bytes of one element of numpy dtype ``dtype`` (a name), asked for every tensor by
    every stage: ``np.dtype`` parses the name each time."""
    return np.dtype(dtype).itemsize


@dataclass
class Node:
    name: str
    op: str
    inputs: list  # tensor names; '' marks an omitted optional input
    outputs: list
    attrs: dict = field(default_factory=dict)

    def __str__(self):
        args = ", ".join(i or "_" for i in self.inputs)
        attrs = "".join(f", {k}={v!r}" for k, v in sorted(self.attrs.items()))
        return f"{', '.join(self.outputs)} = {self.op}({args}{attrs})  # {self.name}"


@dataclass
class Graph:
    name: str
    inputs: list  # graph input tensor names, in ONNX order
    outputs: list
    nodes: list
    tensors: dict  # name -> TensorInfo, for every tensor (activations and constants)
    constants: dict  # name -> np.ndarray (empty values when loaded for structure only)
    opset: int = 17

    def info(self, name):
        return self.tensors[name]

    def is_constant(self, name):
        return name in self.constants

    def producers(self):
        return {out: node for node in self.nodes for out in node.outputs}

    def consumers(self):
        users = {}
        for node in self.nodes:
            for name in node.inputs:
                if name:
                    users.setdefault(name, []).append(node)
        return users

    def sole_reader(self, name, consumers):
        """The one node reading tensor ``name`` (once) when the graph does not output it,
        else None; ``consumers``: the pass's consumers() map."""
        readers = consumers.get(name, [])
        return readers[0] if len(readers) == 1 and name not in self.outputs else None

    def add_constant(self, name, value):
        value = np.array(value, order="C")  # (ascontiguousarray would make a scalar 1-D)
        self.constants[name] = value
        self.tensors[name] = TensorInfo(name, value.dtype.name, tuple(value.shape))

    def replace_uses(self, old, new):
        """Point every reader of tensor ``old`` at ``new`` (graph outputs included)."""
        for node in self.nodes:
            node.inputs = [new if i == old else i for i in node.inputs]
        self.outputs = [new if o == old else o for o in self.outputs]

    def drop_unused_constants(self):
        used = {i for n in self.nodes for i in n.inputs} | set(self.outputs)
        for name in [c for c in self.constants if c not in used]:
            del self.constants[name]
            del self.tensors[name]

    def __str__(self):
        lines = [f"graph {self.name}({', '.join(self.inputs)}) -> {', '.join(self.outputs)}"]
        lines += [f"  {n}" for n in self.nodes]
        return "\n".join(lines)


class Names:
    """Fresh names for one pass over ``graph``: ``unique(base)`` is the first of base,
    base_1, base_2, ... that is neither a tensor nor a node name of the graph when this
    was made, nor a name ``unique`` gave or ``taken`` received since.

    Passes change ``Graph.nodes`` and ``Graph.tensors`` directly, so the graph cannot keep
    such a set itself; a pass makes one before it names anything (one walk over the
    graph) and asks it for every name, each in constant time: names only get taken in
    between, so the suffix a base reached is where its next search starts."""

    def __init__(self, graph):
        self.taken = set(graph.tensors) | {n.name for n in graph.nodes}
        self._next = {}  # base -> the suffix its next search starts at (0: base itself)

    def unique(self, base):
        k = self._next.get(base, 0)
        name = f"{base}_{k}" if k else base
        while name in self.taken:
            k += 1
            name = f"{base}_{k}"
        self._next[base] = k + 1
        self.taken.add(name)
        return name
