"""Pad (constant, reflect, edge, wrap), for every element type.

Which input coordinate each output coordinate reads is resolved per dimension at compile
time (a small table per dimension, -1 for the constant), so every mode and negative
pads (cropping) are one kernel.
"""

from onnxcc.core.cgen import c_literal

from . import KernelCall, unsupported
from .layout import row_major_strides
from .unary import dtype_tag


def source_index(o, before, n, mode):
    """The input coordinate output coordinate ``o`` reads along a dimension of size ``n``
    padded with ``before`` in front (-1: the constant)."""
    i = o - before
    if 0 <= i < n:
        return i
    if mode == "constant":
        return -1
    if mode == "edge":
        return min(max(i, 0), n - 1)
    if mode == "wrap":
        return i % n
    if n == 1:  # reflect
        return 0
    period = 2 * (n - 1)
    i %= period
    return i if i < n else period - i


def lower_pad(node, graph):
    x, y = node.inputs[0], node.outputs[0]
    in_shape, out_shape = graph.info(x).shape, graph.info(y).shape
    rank = len(in_shape)
    a = node.attrs
    mode = a.get("mode", "constant")
    if mode not in ("constant", "reflect", "edge", "wrap"):
        raise unsupported(node, f"mode '{mode}'")
    axes = [ax % rank for ax in a.get("axes", range(rank))]
    before = [0] * rank
    for k, ax in enumerate(axes):
        before[ax] = a["pads"][k]
    maps = [[source_index(o, before[d], in_shape[d], mode) for o in range(out_shape[d])]
            for d in range(rank)]
    if any(n == 0 for n in in_shape) and mode != "constant":
        raise unsupported(node, f"mode '{mode}' of an empty input")
    dtype = graph.info(x).dtype
    inputs = [("x", x)]
    runtime_value = len(node.inputs) > 2 and node.inputs[2]
    if runtime_value:
        inputs.append(("value", node.inputs[2]))
    constant = mode == "constant" and any(-1 in m for m in maps)
    p = {"shape": list(out_shape), "x_strides": row_major_strides(in_shape), "maps": maps,
         "constant": constant,
         "value": "value[0]" if runtime_value else c_literal(a.get("value", 0), dtype)}
    if runtime_value and not constant:
        inputs.pop()  # never read: no parameter (it would be unused)
    tag = (f"{mode}_{dtype_tag(dtype)}_{'x'.join(map(str, in_shape))}_to_"
           f"{'x'.join(map(str, out_shape))}_p{'x'.join(map(str, before))}")
    return KernelCall("pad", tag, p, inputs, [("y", y)])


LOWERINGS = {"Pad": lower_pad}
TYPED_OPS = {"Pad"}
