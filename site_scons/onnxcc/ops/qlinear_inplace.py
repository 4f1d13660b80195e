"""Integer kernels that write their output over an input: the float kernels' abilities
(conv_inplace.py, pool.py, binary.py, normalize.py) for int8 and uint8 tensors.

The proofs are the float ones, element for element: an integer kernel reads and writes
in the same order as its float counterpart, and every int8 / uint8 tensor has one byte
per element, so y's element i lands on x's element i (scratch is counted in bytes: one
per element). An output wider or narrower than the input it would overwrite (the int32
sums of ConvInteger) never shares its memory, except for QuantizeLinear and
DequantizeLinear, elementwise in an order that allows it.
"""

from dataclasses import replace

import numpy as np

from . import in_place
from ..cgen import c_type
from .qlinear import (RESIDUAL_INPUT, lower_dequantize, lower_qadd, lower_qavgpool, lower_qconv,
                      lower_qglobal_avgpool, lower_qlookup, lower_qsoftmax, lower_quantize)
from .spatial import overwrites_only_read_input


def _widths(graph, node, tensor):
    return (np.dtype(graph.info(tensor).dtype).itemsize,
            np.dtype(graph.info(node.outputs[0]).dtype).itemsize)


def same_width(graph, node, tensor):
    x_width, y_width = _widths(graph, node, tensor)
    return x_width == y_width


def _elementwise(lower):
    """For kernels that read each element of x right before writing the same element of y
    (QLinearSigmoid / LeakyRelu tables), or a whole row before writing any of it and then
    element by element (QLinearSoftmax); QLinearGlobalAveragePool writes y[o] after row o
    of x is read, at or before that row."""
    def fn(node, graph, tensor):
        if not same_width(graph, node, tensor):
            return None
        return in_place(lower(node, graph), tensor, ("x",))
    return fn


def qadd_in_place(node, graph, tensor):
    """y may be an operand read at y's own index (one not broadcast): each element is read
    right before the same element of y is written."""
    if not same_width(graph, node, tensor):
        return None
    call = lower_qadd(node, graph)
    p = call.params
    roles = [r for r, strides in (("a", p["a_strides"]), ("b", p["b_strides"]))
             if strides == p["out_strides"]]
    return in_place(call, tensor, roles)


def _channelwise(g):
    """Each output channel reads only the input channel of its index (depthwise, or a
    single channel): what writing y over x a channel at a time needs."""
    return g["group"] == g["c"] == g["m"]


def is_pointwise(g):
    return (g["group"] == 1 and (g["kh"], g["kw"], g["sh"], g["sw"]) == (1, 1, 1, 1)
            and (g["pt"], g["pl"], g["pb"], g["pr"]) == (0, 0, 0, 0))


def qconv_in_place(node, graph, tensor):
    """A fused residual r (passes/fuse_residual_qadd.py): each element of r is read right
    before the same element of y is written.

    Depthwise: y is computed a row at a time, after every element of x the row reads; a
    row is written over x only when every element of y lands where no later element
    reads x (spatial.overwrites_only_read_input: strided ones), else each channel goes to
    scratch (one channel of y, OH*OW bytes) and is then copied over channel k of y, which
    lies within channels 0..k of x when a channel does not grow: all read already.

    1x1, stride 1, no pads: the C inputs of pixel p are copied to scratch (C bytes), then
    y[k][p] written for every k: in batch 1 that is x's pixel p of channel k or beyond x's
    end; with batches, M <= C keeps batch b of y at or before batch b of x."""
    if not same_width(graph, node, tensor):
        return None
    call = lower_qconv(node, graph)
    g = call.params
    if g["residual"] and tensor == node.inputs[RESIDUAL_INPUT]:
        return in_place(call, tensor, ("r",))
    if _channelwise(g) and overwrites_only_read_input(g):
        return in_place(call, tensor, ("x",))
    if _channelwise(g) and g["oh"] * g["ow"] <= g["h"] * g["w"]:
        params = dict(g, in_place=True, y_type=c_type(graph.info(node.outputs[0]).dtype))
        return in_place(replace(call, params=params), tensor, ("x",),
                        scratch_bytes=g["oh"] * g["ow"])
    if is_pointwise(g) and (g["n"] == 1 or g["m"] <= g["c"]):
        params = dict(g, x_type=c_type(graph.info(node.inputs[0]).dtype))
        return in_place(replace(call, params=params), tensor, ("x",),
                        template="qconv2d_1x1_inplace", tag=call.tag, scratch_bytes=g["c"])
    return None


def qavgpool_in_place(node, graph, tensor):
    """Straight over x where that only overwrites x already read (strided pools); else each
    channel is pooled into scratch (OH*OW bytes), then copied over y's channel: that lands
    on channels of x already read, as long as a channel does not grow. A window that is the
    whole input runs the global pool (see _elementwise)."""
    if not same_width(graph, node, tensor):
        return None
    call = lower_qavgpool(node, graph)
    p = call.params
    if call.template == "qglobal_avgpool" or overwrites_only_read_input(p):
        return in_place(call, tensor, ("x",))
    if p["oh"] * p["ow"] > p["h"] * p["w"]:
        return None
    return in_place(replace(call, params=dict(p, in_place=True)), tensor, ("x",),
                    scratch_bytes=p["oh"] * p["ow"])


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


INPLACE = {"QLinearConv": qconv_in_place, "QLinearAdd": qadd_in_place,
           "QLinearAveragePool": qavgpool_in_place,
           "QLinearGlobalAveragePool": _elementwise(lower_qglobal_avgpool),
           "QLinearSoftmax": _elementwise(lower_qsoftmax),
           "QLinearSigmoid": _elementwise(lower_qlookup),
           "QLinearLeakyRelu": _elementwise(lower_qlookup), "QuantizeLinear": quantize_in_place,
           "DequantizeLinear": dequantize_in_place}
