"""Multiply-accumulates per node, from the graph's shapes (for ``profile`` and report.html).

A MAC is one ``acc += a * b`` of the op's naive definition:

* Conv, ConvInteger, QLinearConv: output elements x kernel volume
  (``W.shape[1:]``: input channels per group x kernel size);
* ConvTranspose: input elements x ``W.shape[1:]`` (output channels per group x kernel size);
* Gemm, QGemm: output elements x the reduction size K;
* MatMul, MatMulInteger, QLinearMatMul: output elements x K (the last axis of A);
* Einsum of two operands: the product of the sizes of all its letters;
* RNN, GRU, LSTM: time steps x batch x directions x gate rows x (input + hidden size).

Every other op counts 0: elementwise ops, pooling, normalization and data movement do no
multiply-accumulate (a fused activation or bias does not count either). Reads shapes
only, so a graph loaded without weights will do.
"""

import math

#: ops whose weight tensor, at this input index, holds the kernel. In onnxcc's graph (the
#: optimized one this module reads) the integer ops take [x, w, bias] like Conv: their
#: scales and zero points are attributes (importer/qoperator.py), not ONNX's extra inputs
_CONV_WEIGHT = {"Conv": 1, "ConvInteger": 1, "QLinearConv": 1}
_MATMUL_B = {"MatMul": 1, "MatMulInteger": 1, "QLinearMatMul": 1}
_GEMM_A = {"Gemm": 0, "QGemm": 0}


def _shape(graph, tensor):
    return tuple(graph.info(tensor).shape)


def _size(graph, tensor):
    return math.prod(_shape(graph, tensor))


def _einsum(graph, node):
    if len([t for t in node.inputs if t]) != 2:
        return 0
    equation = node.attrs.get("equation", "")
    if isinstance(equation, bytes):
        equation = equation.decode()
    operands = equation.replace(" ", "").split("->")[0].split(",")
    if "." in "".join(operands):
        return 0  # ellipses: not counted
    sizes = {}
    for letters, tensor in zip(operands, node.inputs):
        for letter, dim in zip(letters, _shape(graph, tensor)):
            sizes[letter] = max(sizes.get(letter, 1), dim)
    return math.prod(sizes.values())


def _recurrent(graph, node):
    x, w, r = node.inputs[:3]
    directions, gate_rows, input_size = _shape(graph, w)
    hidden = _shape(graph, r)[2]
    steps_x_batch = _size(graph, x) // max(1, input_size)
    return steps_x_batch * directions * gate_rows * (input_size + hidden)


def node_macs(graph, node):
    """The multiply-accumulates of one run of ``node`` (0 for ops that do none)."""
    op = node.op
    if op in _CONV_WEIGHT:
        return _size(graph, node.outputs[0]) * math.prod(_shape(graph, node.inputs[_CONV_WEIGHT[op]])[1:])
    if op == "ConvTranspose":
        return _size(graph, node.inputs[0]) * math.prod(_shape(graph, node.inputs[1])[1:])
    if op in _GEMM_A:
        a = _shape(graph, node.inputs[_GEMM_A[op]])
        k = a[0] if node.attrs.get("transA", 0) else a[-1]
        return _size(graph, node.outputs[0]) * k
    if op in _MATMUL_B:
        a = _shape(graph, node.inputs[0])
        return _size(graph, node.outputs[0]) * (a[-1] if a else 1)
    if op == "Einsum":
        return _einsum(graph, node)
    if op in ("RNN", "GRU", "LSTM"):
        return _recurrent(graph, node)
    return 0


def graph_macs(graph):
    """{node name: MACs} of every node of ``graph``."""
    return {node.name: node_macs(graph, node) for node in graph.nodes}
