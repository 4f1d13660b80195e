"""A decomposed LayerNorm as one LayerNormalization node.

Exporters below opset 17 (TorchScript at opset 13) write LayerNorm as
``m = ReduceMean(x); d = x - m; v = ReduceMean(d * d); y = d / Sqrt(v + eps) * g + b``
(``Pow(d, 2)`` is ``Mul(d, d)`` by pow_square by now): nine nodes, two of them
reference reductions, and four passes over x's elements more than the vector
LayerNormalization kernel's three (ReduceMean was 3.5% of an AVX-512 transformer's time).
The node is internal: the compiler runs LayerNormalization at any opset.

The chain fuses when both ReduceMeans take the same trailing axes with keepdims, eps is
a float constant of one element, every intermediate has one reader (the one the pattern
names; ``d`` two) and is no graph output, all float32 of x's shape; ``* g`` and ``+ b``
join when their constant broadcasts over the normalized axes alone (g is ones without).
One walk over the nodes, each chain followed from its first ReduceMean.
"""

import numpy as np

from onnxcc.core.ir import Names


def _trailing_axes(node, rank):
    """The first of the reduced axes when they are keepdims' trailing ones, else None."""
    if node.attrs.get("keepdims", 1) != 1:
        return None
    axes = node.attrs.get("axes")
    if axes is None:
        if node.attrs.get("noop_with_empty_axes", 0):
            return None
        axes = range(rank)
    axes = sorted({a % rank for a in axes}) if rank else []
    if not axes or axes != list(range(axes[0], rank)):
        return None
    return axes[0]


class _Chain:
    """Follows one node to its sole reader, checking what the pattern needs."""

    def __init__(self, graph, consumers):
        self.graph, self.consumers = graph, consumers

    def only_reader(self, tensor, op):
        """The one node reading ``tensor`` if it is an ``op`` and the tensor is internal."""
        reader = self.graph.sole_reader(tensor, self.consumers)
        return reader if reader is not None and reader.op == op else None

    def other(self, node, tensor):
        """The other input of a binary ``node`` one of whose inputs is ``tensor``."""
        if len(node.inputs) != 2 or tensor not in node.inputs or node.inputs[0] == node.inputs[1]:
            return None
        return node.inputs[1] if node.inputs[0] == tensor else node.inputs[0]


def _eps(graph, name):
    if not graph.is_constant(name) or graph.info(name).dtype != "float32":
        return None
    value = graph.constants[name]
    return float(value.reshape(-1)[0]) if value.size == 1 else None


def _affine(graph, name, shape, axis):
    """The constant ``name`` broadcast to ``shape[axis:]`` if it varies over those axes
    alone (and keeps y's shape), else None."""
    if name is None or not graph.is_constant(name) or graph.info(name).dtype != "float32":
        return None
    value = graph.constants[name]
    if value.ndim > len(shape):
        return None
    full = (1,) * (len(shape) - value.ndim) + tuple(value.shape)
    if any(d != 1 for d in full[:axis]):
        return None
    if any(d not in (1, s) for d, s in zip(full[axis:], shape[axis:])):
        return None
    return np.ascontiguousarray(np.broadcast_to(value.reshape(full[axis:]), shape[axis:]))


def _affine_step(graph, chain, nodes, op, shape, axis):
    """The constant of the ``op`` that alone reads the chain's end, appended to ``nodes``
    when it is one _affine takes, else None."""
    end = nodes[-1].outputs[0]
    node = chain.only_reader(end, op)
    value = node and _affine(graph, chain.other(node, end), shape, axis)
    if value is None:
        return None
    nodes.append(node)
    return value


def _match(graph, chain, mean):
    """(x, axis, eps, y, gamma, beta, the other nodes) of the chain starting at ``mean``."""
    x, m = mean.inputs[0], mean.outputs[0]
    info = graph.info(x)
    if info.dtype != "float32" or not info.size or not info.shape or len(mean.inputs) != 1:
        return None
    shape, axis = tuple(info.shape), _trailing_axes(mean, len(info.shape))
    sub = chain.only_reader(m, "Sub")
    if axis is None or sub is None or sub.inputs != [x, m]:
        return None
    d = sub.outputs[0]
    readers = chain.consumers.get(d, [])  # the square twice (it reads d as both operands)
    if len(readers) != 3 or d in graph.outputs:
        return None
    square = next((r for r in readers if r.op == "Mul" and r.inputs == [d, d]), None)
    div = next((r for r in readers if r.op == "Div" and r.inputs[0] == d), None)
    if square is None or div is None:
        return None
    var = chain.only_reader(square.outputs[0], "ReduceMean")
    if var is None or _trailing_axes(var, len(shape)) != axis:
        return None
    add = chain.only_reader(var.outputs[0], "Add")
    eps = add and _eps(graph, chain.other(add, var.outputs[0]) or "")
    sqrt = eps is not None and chain.only_reader(add.outputs[0], "Sqrt")
    if not sqrt or div.inputs[1] != sqrt.outputs[0] \
            or chain.only_reader(sqrt.outputs[0], "Div") is not div:
        return None
    nodes = [sub, square, var, add, sqrt, div]
    gamma = _affine_step(graph, chain, nodes, "Mul", shape, axis)
    beta = _affine_step(graph, chain, nodes, "Add", shape, axis)
    y = nodes[-1].outputs[0]
    if any(graph.info(t).shape != info.shape or graph.info(t).dtype != "float32"
           for t in (d, square.outputs[0], div.outputs[0], y)):
        return None
    return x, axis, eps, y, gamma, beta, nodes


def fuse_layer_norm(graph):
    """The first ReduceMean of each matched chain becomes the LayerNormalization; the
    rest of its nodes are dropped at the end (one pass, linear in the graph)."""
    consumers, removed, names = graph.consumers(), set(), None
    chain = _Chain(graph, consumers)
    for mean in graph.nodes:
        if mean.op != "ReduceMean" or id(mean) in removed:
            continue
        found = _match(graph, chain, mean)
        if found is None:
            continue
        x, axis, eps, y, gamma, beta, chained = found
        names = names or Names(graph)
        n = graph.info(x).shape[axis:]
        if gamma is None:
            gamma = np.ones(n, dtype=np.float32)
        inputs = []
        for role, value in (("scale", gamma), ("bias", beta)):
            if value is not None:
                name = names.unique(f"{mean.name}_{role}")
                graph.add_constant(name, value.astype(np.float32))
                inputs.append(name)
        # the LayerNormalization takes the first ReduceMean's place: what it reads (x,
        # constants) is before it, every reader of y after the chain's end
        mean.op, mean.inputs, mean.outputs = "LayerNormalization", [x] + inputs, [y]
        mean.attrs = {"axis": axis, "epsilon": eps}
        removed.update(id(k) for k in chained)
    if removed:
        graph.nodes = [n for n in graph.nodes if id(n) not in removed]
        graph.drop_unused_constants()
    return graph
