"""Fuse a per-channel scale into the 1x1 convolution that reads it: a squeeze-excitation's.

``y = Conv1x1(Mul(x, s))``, ``s`` one factor per input channel ([1, C, 1, 1]), is
``(W diag(s)) x``: the Conv takes ``s`` as its fourth input (``SCALE_INPUT``; the bias
``''`` where absent) and scales its weights by it at run time (ops/conv/gemm.py: gemm1x1
multiplies its packed weights into scratch before its GEMM; direct multiplies each
input element by its channel's factor, the Mul's own rounding). The Mul's pass over
x and the tensor ``x * s`` are gone.

The rule, the same on every target: the scaled weights are a pass over M x C floats,
the Mul's a pass over C x H x W; but the weights come from memory (read once an
inference, out of every cache), x from the cache its producer just wrote it to, and the
GEMM's own stream of the weights, which the pass replaces, overlapped its multiply-adds.
So the Mul fuses when ``WEIGHT_STREAM`` times the output channels M is at most the
pixels H x W. Measured in EfficientNet-B0 on AVX-512 (benchmarks/channel_scale.py,
se_scale + project): 0.72-0.89 of before where 4M <= HW (the blocks of 28x28 pixels and
more, 19.6x as many elements in x as in the weights and more), 0.98-1.15 where x had
1.75-2.45x (14x14: a weight float ~2.4 cycles, x's ~0.5).
RAM, on every target: the Mul's tensor x * s is gone (the Mul ran in place, so peaks
rarely fall), and gemm1x1's scratch copy adds M x C floats at the Conv's step -- by
the rule at most a quarter of x. opt=size picks direct: no copy. (An SE block on
cortex-m7, C 96 -> M 24 at 20x20: arena 165.2 KiB fused or not, opt=speed; 150.4
opt=size.)
Only where the Conv is gemm1x1's (1x1, stride 1, unpadded, one group) and is the Mul's
only reader, and ``s`` is the same for every image.
"""

from onnxcc.ops.common.epilogue import epilogue_of, own_inputs
from onnxcc.ops.common.spatial import window_2d

#: the index of the scale among a Conv's own inputs (x, w, b, s)
SCALE_INPUT = 3
#: how many of x's elements a weight's pass costs (the rule above)
WEIGHT_STREAM = 4


def _per_channel(shape, x_shape):
    """Whether ``shape`` broadcasts as one factor per channel of ``x_shape`` (NC...)."""
    if len(shape) > len(x_shape) or len(x_shape) < 3:
        return False
    full = (1,) * (len(x_shape) - len(shape)) + tuple(shape)
    return full[0] == 1 and full[1] == x_shape[1] and all(d == 1 for d in full[2:])


def _gemm_1x1(conv, graph):
    """Whether the Conv is a 1x1, stride-1, unpadded, one-group convolution of 4 inputs at most."""
    own = own_inputs(conv)
    if conv.op != "Conv" or len(own) > SCALE_INPUT or conv.attrs.get("group", 1) != 1:
        return False
    x_shape, y_shape = graph.info(own[0]).shape, graph.info(conv.outputs[0]).shape
    if len(x_shape) not in (3, 4) or graph.info(own[1]).shape[2:] != (1,) * (len(x_shape) - 2):
        return False
    g = window_2d(conv, x_shape, y_shape, graph.info(own[1]).shape[2:])
    return (g["sh"], g["sw"], g["pt"], g["pl"], g["pb"], g["pr"]) == (1, 1, 0, 0, 0, 0)


def _fusable(graph, mul, consumers):
    """(x, s, conv) when ``mul`` scales x per channel for a gemm1x1 Conv alone, and the
    rule says the weights are the cheaper pass."""
    if mul.op != "Mul" or len(mul.inputs) != 2 or epilogue_of(mul) or mul.inputs[0] == mul.inputs[1]:
        return None
    y = mul.outputs[0]
    conv = graph.sole_reader(y, consumers)
    if conv is None or graph.info(y).dtype != "float32":
        return None
    if not _gemm_1x1(conv, graph) or conv.inputs[0] != y or conv.inputs.count(y) != 1:
        return None
    shape = graph.info(y).shape
    for x, s in (mul.inputs, mul.inputs[::-1]):
        if graph.info(x).shape == shape and _per_channel(graph.info(s).shape, shape) \
                and graph.info(x).dtype == graph.info(s).dtype == "float32":
            m, pixels = graph.info(conv.outputs[0]).shape[1], 1
            for d in shape[2:]:
                pixels *= d
            return (x, s, conv) if WEIGHT_STREAM * m <= pixels else None
    return None


def fuse_channel_scale(graph):
    """One pass over the nodes: the readers of a fused Mul's x and s are updated in place
    and the Muls dropped at the end (linear in the graph, however many fuse)."""
    consumers, removed = graph.consumers(), set()
    for mul in graph.nodes:
        found = _fusable(graph, mul, consumers)
        if found is None:
            continue
        x, s, conv = found
        own = own_inputs(conv)
        rest = conv.inputs[len(own):]  # the epilogue's operands
        own = own + [""] * (SCALE_INPUT - len(own))
        conv.inputs = [x] + own[1:] + [s] + rest
        for t in (x, s):
            consumers[t] = [conv if r is mul else r for r in consumers.get(t, [])]
        removed.add(id(mul))
    if removed:
        graph.nodes = [n for n in graph.nodes if id(n) not in removed]
    return graph
