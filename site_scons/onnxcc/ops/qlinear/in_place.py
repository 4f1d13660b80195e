"""Integer kernels that write their output over an input: the float kernels' abilities
(conv_inplace.py, pool.py, binary.py, normalize.py) for int8 and uint8 tensors.

The proofs are the float ones, element for element: an integer kernel reads and writes
in the same order as its float counterpart, and every int8 / uint8 tensor has one byte
per element, so y's element i lands on x's element i (scratch is counted in bytes: one
per element). An output wider or narrower than the input it would overwrite (the int32
sums of ConvInteger) never shares its memory, except for QuantizeLinear and
DequantizeLinear, elementwise in an order that allows it.
"""

import numpy as np

from onnxcc.ops import in_place
from onnxcc.ops.common.spatial import conv_over_x, window_over_x

from .lowering import (RESIDUAL_INPUT, TABLES, lower_dequantize, lower_qavgpool, lower_qbinary,
                       lower_qconv, lower_qglobal_avgpool, lower_qlookup, lower_qsoftmax,
                       lower_quantize)


def _widths(graph, node, tensor):
    return (np.dtype(graph.info(tensor).dtype).itemsize,
            np.dtype(graph.info(node.outputs[0]).dtype).itemsize)


def same_width(graph, node, tensor):
    x_width, y_width = _widths(graph, node, tensor)
    return x_width == y_width


def _elementwise(lower):
    """For kernels that read each element of x right before writing the same element of y
    (the table ops: QLinearSigmoid, ...), or a whole row before writing any of it and then
    element by element (QLinearSoftmax); QLinearGlobalAveragePool writes y[o] after row o
    of x is read, at or before that row."""
    def fn(node, graph, tensor):
        if not same_width(graph, node, tensor):
            return None
        return in_place(lower(node, graph), tensor, ("x",))
    return fn


def qbinary_in_place(node, graph, tensor):
    """y may be an operand read at y's own index (one not broadcast): each element is read
    right before the same element of y is written."""
    if not same_width(graph, node, tensor):
        return None
    call = lower_qbinary(node, graph)
    p = call.params
    roles = [r for r, strides in (("a", p["a_strides"]), ("b", p["b_strides"]))
             if strides == p["out_strides"]]
    return in_place(call, tensor, roles)


def qconv_in_place(node, graph, tensor):
    """A fused residual r (passes/fuse_residual_qadd.py): each element of r is read right
    before the same element of y is written. Else over x by spatial.py's rules (one byte
    of scratch per element)."""
    if not same_width(graph, node, tensor):
        return None
    call = lower_qconv(node, graph)
    g = call.params
    if g["residual"] and tensor == node.inputs[RESIDUAL_INPUT]:
        return in_place(call, tensor, ("r",))
    return conv_over_x(call, tensor, 1)


def qavgpool_in_place(node, graph, tensor):
    """By spatial.window_over_x; a window that is the whole input runs the global pool
    (see _elementwise)."""
    if not same_width(graph, node, tensor):
        return None
    call = lower_qavgpool(node, graph)
    if call.template == "qglobal_avgpool":
        return in_place(call, tensor, ("x",))
    return window_over_x(call, tensor, 1)


def quantize_in_place(node, graph, tensor):
    """y[i] is written right after x[i] is read, first to last; y's elements being no
    wider than x's, y[i] lies within x[0..i], all read already."""
    x_width, y_width = _widths(graph, node, tensor)
    return in_place(lower_quantize(node, graph), tensor, ("x",)) if y_width <= x_width else None


def dequantize_in_place(node, graph, tensor):
    """y[i] is written right after x[i] is read, last to first; y's elements being no
    narrower than x's, y[i] lies within x[i..], all read already."""
    x_width, y_width = _widths(graph, node, tensor)
    return in_place(lower_dequantize(node, graph), tensor, ("x",)) if y_width >= x_width else None


INPLACE = {"QLinearConv": qconv_in_place, "QLinearAdd": qbinary_in_place,
           "QLinearMul": qbinary_in_place,
           "QLinearAveragePool": qavgpool_in_place,
           "QLinearGlobalAveragePool": _elementwise(lower_qglobal_avgpool),
           "QLinearSoftmax": _elementwise(lower_qsoftmax),
           **{op: _elementwise(lower_qlookup) for op in TABLES},
           "QuantizeLinear": quantize_in_place, "DequantizeLinear": dequantize_in_place}
