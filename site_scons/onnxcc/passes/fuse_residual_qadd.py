"""Fuse a QLinearAdd into the QLinearConv before it: the integer ``fuse_residual_add``.

``y = QLinearAdd(QLinearConv(x), r)`` becomes one QLinearConv that requantizes each sum
to the Conv's own output code, as before, and adds ``r``'s element to it right away with
the Add's arithmetic: the same integers as the two kernels (the Conv's output never
leaves a register), and the memory planner can let the Conv write ``y`` over ``r`` when
``r`` dies there (a ResNet block then needs two feature maps at once instead of three).

The fused Conv takes ``r`` as its sixth input (after the optional bias and per-channel
requantization tables, ``''`` where absent) and ``onnxcc_residual``: which Add operand
the Conv was and the quantization and clamp of its vanished output. Its output, clamp
(``onnxcc_clamp``) and place in the graph are the Add's, where ``r`` exists.
"""

from onnxcc.core.quant import int_range, scalar
from onnxcc.ops.qlinear.lowering import RESIDUAL_INPUT

from .ort_groups import FLOAT_STEPS, U8_CODES


def _fusable(graph, add, consumers, producers):
    """(conv, its operand index, residual) when the Add sums a QLinearConv's only use with
    a tensor of its shape."""
    if (add.op != "QLinearAdd" or len(add.inputs) != 2 or add.inputs[0] == add.inputs[1]
            or add.attrs.get(FLOAT_STEPS)):
        return None
    shape = graph.info(add.outputs[0]).shape
    if any(graph.info(t).shape != shape for t in add.inputs):
        return None
    for k in (0, 1):
        c, r = add.inputs[k], add.inputs[1 - k]
        conv = producers.get(c)
        if (conv is not None and conv.op == "QLinearConv" and "onnxcc_residual" not in conv.attrs
                and graph.sole_reader(c, consumers) is not None):
            return conv, k, r
    return None


def fuse_residual_qadd(graph):
    consumers, producers = graph.consumers(), graph.producers()
    for add in list(graph.nodes):
        found = _fusable(graph, add, consumers, producers)
        if found is None:
            continue
        conv, operand, residual = found
        between = graph.info(conv.outputs[0])
        conv.attrs["onnxcc_residual"] = {
            "operand": operand, "scale": float(scalar(between.quant, "scale")),
            "zero_point": scalar(between.quant, "zero_point"),
            "clamp": list(conv.attrs.get("onnxcc_clamp", int_range(between.dtype))),
            "u8_codes": int(bool(add.attrs.get(U8_CODES)))}
        conv.attrs.pop("onnxcc_clamp", None)
        if "onnxcc_clamp" in add.attrs:
            conv.attrs["onnxcc_clamp"] = add.attrs["onnxcc_clamp"]
        conv.inputs = conv.inputs + [""] * (RESIDUAL_INPUT - len(conv.inputs)) + [residual]
        conv.outputs = add.outputs
        graph.nodes.remove(conv)
        graph.nodes[graph.nodes.index(add)] = conv
        consumers, producers = graph.consumers(), graph.producers()
    return graph
