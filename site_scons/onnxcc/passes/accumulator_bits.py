"""How wide can an integer convolution's sums get? Record it in the graph structure.

The code generator reads the graph without its weights (a weights-only edit regenerates
no kernel), but a kernel can drop a range test when its int32 sums provably stay small.
So each QLinearConv and QGemm (onnxcc's form: x, w, bias, ...; quantization parameters
on the tensors) whose weights and bias are constants gets ``onnxcc_sum_bits``: the bit
length of the largest |sum| any input can produce, |bias| + max |x - x_zero_point| *
sum |w| over an output channel (the sums of the kernels that read it: weights with zero
point 0). It changes only when a weights edit crosses a power of two.
"""

import numpy as np

from onnxcc.core.quant import int_range


def accumulator_bits(graph):
    for node in graph.nodes:
        if node.op not in ("QLinearConv", "QGemm") or len(node.inputs) < 2:
            continue
        x, w = node.inputs[0], node.inputs[1]
        b = node.inputs[2] if len(node.inputs) > 2 else ""
        weights = graph.constants.get(w)
        bias = graph.constants.get(b) if b else 0
        quant = graph.info(x).quant
        if weights is None or bias is None or not quant or len(quant["zero_point"]) != 1 \
                or graph.info(x).dtype not in ("int8", "uint8"):
            continue
        lo, hi = int_range(graph.info(x).dtype)
        zp = int(quant["zero_point"][0])
        sums = np.abs(weights.astype(np.int64)).reshape(weights.shape[0], -1).sum(axis=1)
        bound = np.abs(np.asarray(bias, np.int64)) + max(zp - lo, hi - zp) * sums
        node.attrs["onnxcc_sum_bits"] = int(bound.max()).bit_length()
