"""Pow(x, 2) as Mul(x, x): exported LayerNorm and RMSNorm decompositions square with Pow,
which runs powf per element in the reference kernel; a product is exact to the same
rounding (both are the correctly rounded square) and runs in the vector kernels."""

import numpy as np

FLOATS = {"float32", "float64"}


def _squares(node, graph):
    """A Pow of a float tensor by a constant 2 (scalar or broadcast) that keeps x's shape."""
    if node.op != "Pow" or len(node.inputs) != 2 or not graph.is_constant(node.inputs[1]):
        return False
    x, y = graph.info(node.inputs[0]), graph.info(node.outputs[0])
    exponent = graph.constants[node.inputs[1]]
    return (x.dtype in FLOATS and y.dtype == x.dtype and tuple(y.shape) == tuple(x.shape)
            and exponent.size > 0 and bool(np.all(exponent == 2)))


def pow_square(graph):
    for node in graph.nodes:
        if _squares(node, graph):
            node.op, node.inputs = "Mul", [node.inputs[0], node.inputs[0]]
    graph.drop_unused_constants()
    return graph
