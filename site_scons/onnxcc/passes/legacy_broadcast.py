"""Before opset 7, elementwise ops broadcast their second input from ``axis`` (not from
the right, as numpy does), and PRelu's 1-D slope is one per channel: such operands are
re-shaped here so that every later stage sees numpy broadcasting only."""

import numpy as np

from onnxcc.core.ir import Names, Node, TensorInfo

BINARY = {"Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Greater", "Less"}


def _aligned_shape(node, graph):
    """The numpy shape of the second input, or None when it already broadcasts so."""
    a, b = (graph.info(t).shape for t in node.inputs[:2])
    if node.op == "PRelu" and len(b) == 1 and len(a) > 2 and b[0] == a[1] and b[0] != 1:
        return (b[0],) + (1,) * (len(a) - 2)
    if node.op in BINARY and node.attrs.get("broadcast", 0) and "axis" in node.attrs:
        axis = node.attrs["axis"] % len(a)
        return (1,) * axis + tuple(b) + (1,) * (len(a) - axis - len(b))
    return None


def legacy_broadcast(graph):
    if graph.opset >= 7:
        return graph
    names, nodes = Names(graph), []
    for node in graph.nodes:
        shape = _aligned_shape(node, graph) if len(node.inputs) > 1 else None
        if shape is None:
            nodes.append(node)
            continue
        if node.op in BINARY:  # broadcast=1 without axis: suffix matching, as numpy
            del node.attrs["axis"]
        b = node.inputs[1]
        aligned = names.unique(f"{b}_aligned")
        if graph.is_constant(b):
            graph.add_constant(aligned, graph.constants[b].reshape(shape))
        else:  # a free view of the runtime tensor
            target = names.unique(f"{b}_aligned_shape")
            graph.add_constant(target, np.array(shape, np.int64))
            graph.tensors[aligned] = TensorInfo(aligned, graph.info(b).dtype, shape)
            nodes.append(Node(f"{node.name}_align", "Reshape", [b, target], [aligned]))
            names.taken.add(nodes[-1].name)
        node.inputs[1] = aligned
        nodes.append(node)
    graph.nodes = nodes
    graph.drop_unused_constants()
    return graph
