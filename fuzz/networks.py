"""Random small CNNs built of the blocks real microcontroller networks are made of, for the
differential fuzzer: MobileNet's inverted residuals, squeeze-excitation (Sigmoid or
HardSigmoid gate, the scale on either side of the Mul), SqueezeNet's fire modules (two
branches concatenated), ShuffleNet's channel shuffle, ResNet's residual block, pools and a
classifier head (GlobalAveragePool, Flatten, Gemm, Softmax), chained.

A *network spec* is ``{"x": [N, C, H, W], "network": [block, ...], "seed": S}`` plus,
as in fuzz/spec.py, ``quant``, ``fuse`` and ``tactic``; ``build_float_model`` turns it
into the same ONNX bytes every time. The blocks chain where one graph spec's stages do
not: the fusions (activations, channel scales, residual Adds) and the memory plan's
in-place choices meet each other here, as in MobileNetV3 or EfficientNet.
"""

import numpy as np
from hypothesis import strategies as st

from .spec import TACTICS, build_float_model, tactics_for

#: activations of the blocks: None, or the ONNX op(s) as exporters write them
ACTIVATIONS = [None, "Relu", "Clip6", "HardSwish", "Swish", "LeakyRelu"]
GATES = ["Sigmoid", "HardSigmoid"]
#: a network stays small: every tensor at most this many elements (qemu runs it)
MAX_ELEMENTS = 6000


def _out(size, k, stride, pad):
    return (size + 2 * pad - k) // stride + 1


def block_output(block, shape):
    """The shape a block turns ``shape`` ([N, C, H, W], or [N, K] after a head) into."""
    n, c, h, w = shape
    kind = block["block"]
    if kind == "conv":
        k, s = block["k"], block["stride"]
        m = c if block["depthwise"] else block["m"]
        return [n, m, _out(h, k, s, k // 2), _out(w, k, s, k // 2)]
    if kind == "inverted":
        k, s = block["k"], block["stride"]
        return [n, block["m"], _out(h, k, s, k // 2), _out(w, k, s, k // 2)]
    if kind == "fire":
        return [n, block["e1"] + block["e3"], h, w]
    if kind == "pool":
        k, s, p = block["k"], block["stride"], block["pad"]
        return [n, c, _out(h, k, s, p), _out(w, k, s, p)]
    if kind == "head":
        return [n, block["classes"]]
    return shape  # se, shuffle, residual


def _fits(shape, widest):
    return all(d >= 1 for d in shape) and widest <= MAX_ELEMENTS


@st.composite
def _block(draw, shape):
    """A block that takes ``shape``; its output fits the limits."""
    n, c, h, w = shape
    kinds = ["conv", "inverted", "se", "fire", "residual", "pool"]
    if any(c % g == 0 for g in range(2, c + 1)):
        kinds.append("shuffle")
    kind = draw(st.sampled_from(kinds))
    act = st.sampled_from(ACTIVATIONS)
    channels = st.integers(1, 16)
    small_k = st.sampled_from([k for k in (1, 3, 5) if k <= max(h, w) + 2])
    if kind == "conv":
        block = {"k": draw(small_k), "stride": draw(st.sampled_from([1, 1, 2])),
                 "depthwise": draw(st.booleans()), "m": draw(channels), "act": draw(act),
                 "bn": draw(st.booleans())}
    elif kind == "inverted":
        block = {"expand": draw(st.sampled_from([1, 2, 3, 4, 6])), "k": draw(st.sampled_from([3, 5])),
                 "stride": draw(st.sampled_from([1, 1, 2])), "act": draw(act),
                 "m": draw(st.just(c) | channels), "se": draw(st.none() | _se_attrs(c))}
    elif kind == "se":
        block = draw(_se_attrs(c))
    elif kind == "fire":
        block = {"squeeze": draw(channels), "e1": draw(channels), "e3": draw(channels)}
    elif kind == "residual":
        block = {"act": draw(act), "bn": draw(st.booleans()), "first": draw(st.booleans())}
    elif kind == "pool":
        k = draw(st.sampled_from([k for k in (2, 3) if k <= min(h, w)] or [1]))
        block = {"op": draw(st.sampled_from(["MaxPool", "AveragePool"])), "k": k,
                 "stride": draw(st.sampled_from([1, 2])), "pad": draw(st.sampled_from([0, k // 2]))}
    else:
        block = {"groups": draw(st.sampled_from([g for g in range(2, c + 1) if c % g == 0])),
                 "grouped_conv": draw(st.booleans())}
    block["block"] = kind
    return block, n * _widest_channels(block, c) * h * w


def _widest_channels(block, c):
    """The channels of the widest tensor the block makes at its input's resolution."""
    kind = block["block"]
    if kind == "conv":
        return max(c, block["m"])
    if kind == "inverted":
        return c * block["expand"]
    if kind == "fire":
        return block["e1"] + block["e3"]
    return c


@st.composite
def _se_attrs(draw, c):
    return {"reduce": draw(st.integers(1, max(1, c))), "squeeze": draw(st.sampled_from([0, 1, 2])),
            "gate": draw(st.sampled_from(GATES)), "scale_first": draw(st.booleans())}


@st.composite
def networks(draw, int8=False, tactics=True):
    """A network spec: 1 to 4 blocks on a small image (batch 1, sometimes 2), then a
    classifier head half the time; a quarter quantized (``int8``: all)."""
    shape = [draw(st.sampled_from([1, 1, 1, 2])), draw(st.integers(1, 12)),
             draw(st.integers(3, 12)), draw(st.integers(3, 12))]
    spec = {"x": list(shape), "network": [], "seed": draw(st.integers(0, 2**31 - 1))}
    for _ in range(draw(st.integers(1, 4))):
        block, widest = draw(_block(shape))
        after = block_output(block, shape)
        if not _fits(after, max(widest, int(np.prod(after)))):
            continue
        spec["network"].append(block)
        shape = after
    if draw(st.booleans()):
        spec["network"].append({"block": "head", "classes": draw(st.integers(2, 12)),
                                "softmax": draw(st.booleans())})
    if not spec["network"]:
        spec["network"].append({"block": "se", **draw(_se_attrs(shape[1]))})
    if int8 or draw(st.integers(0, 3)) == 0:
        spec["quant"] = {"activations": draw(st.sampled_from(["uint8", "int8"])),
                         "per_channel": draw(st.booleans())}
    if tactics:
        spec["fuse"] = draw(st.integers(0, 3)) > 0
        model = build_float_model(spec)
        convs = _conv_anchors(model)
        ops = {node.op_type for node in model.graph.node}
        if "quant" in spec:
            ops |= {"QLinearConv"} if "Conv" in ops else set()
            ops |= {"QGemm"} if "Gemm" in ops else set()
        spec["tactic"] = {op: draw(st.sampled_from(tactics_for(convs, op)))
                          for op in sorted(ops & set(TACTICS)) if tactics_for(convs, op)}
    return spec


def _conv_anchors(model):
    """The model's convolutions as fuzz/spec.py describes an anchor (for tactics_for)."""
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in list(model.graph.value_info) + list(model.graph.input)}
    weights = {t.name: list(t.dims) for t in model.graph.initializer}
    anchors = []
    for node in model.graph.node:
        if node.op_type != "Conv":
            continue
        a = {attr.name: list(attr.ints) if attr.ints else attr.i for attr in node.attribute}
        w = weights[node.input[1]]
        anchors.append({"op": "Conv", "x": shapes[node.input[0]], "w": w,
                        "attrs": {"group": a.get("group", 1), "kernel_shape": w[2:],
                                  "strides": a.get("strides", [1, 1]),
                                  "dilations": a.get("dilations", [1, 1]),
                                  "pads": a.get("pads", [0, 0, 0, 0])}})
    return anchors


class _Net:
    """Emits a network's nodes into a fuzz/spec.py ``_Graph``; every name is unique."""

    def __init__(self, g):
        self.g, self.count = g, 0

    def name(self, what):
        self.count += 1
        return f"n{self.count}_{what}"

    def node(self, op, inputs, **attrs):
        out = self.name(op.lower())
        return self.g.node(op, inputs, out, out, **attrs)

    def activation(self, x, act):
        g = self.g
        if act is None:
            return x
        if act == "Clip6":
            return self.node("Clip", [x, g.constant(self.name("lo"), 0.0), g.constant(self.name("hi"), 6.0)])
        if act == "Swish":  # x * Sigmoid(x), as torch exports SiLU below opset 22
            return self.node("Mul", [x, self.node("Sigmoid", [x])])
        if act == "LeakyRelu":
            return self.node("LeakyRelu", [x], alpha=0.1)
        return self.node(act, [x])

    def conv(self, x, c, m, k, stride=1, group=1, bias=True, bn=False, act=None):
        g = self.g
        w = [m, c // group, k, k]
        args = [x, g.weights(self.name("w"), w, (c // group) * k * k)]
        if bias:
            args.append(g.constant(self.name("b"), g.rng.uniform(-0.5, 0.5, [m])))
        p = k // 2
        y = self.node("Conv", args, kernel_shape=[k, k], strides=[stride, stride],
                      pads=[p, p, p, p], group=group)
        if bn:
            stats = [g.rng.uniform(0.5, 1.5, [m]), g.rng.uniform(-0.5, 0.5, [m]),
                     g.rng.uniform(-0.5, 0.5, [m]), g.rng.uniform(0.5, 1.5, [m])]
            y = self.node("BatchNormalization", [y] + [g.constant(self.name("bn"), s) for s in stats])
        return self.activation(y, act)

    def se(self, x, c, a):
        """x scaled by a gate of its channel means: through ``squeeze`` 1x1 convolutions
        (2: a squeeze to ``reduce`` channels and Relu, then an excite; 1: one; 0: none)."""
        s = self.node("GlobalAveragePool", [x])
        if a["squeeze"] == 2:
            s = self.conv(s, c, a["reduce"], 1, act="Relu")
            s = self.conv(s, a["reduce"], c, 1)
        elif a["squeeze"] == 1:
            s = self.conv(s, c, c, 1)
        s = self.node(a["gate"], [s])
        return self.node("Mul", [s, x] if a["scale_first"] else [x, s])

    def residual(self, x, y, first):
        return self.node("Add", [x, y] if first else [y, x])

    def block(self, x, shape, b):
        n, c, h, w = shape
        kind = b["block"]
        if kind == "conv":
            m = c if b["depthwise"] else b["m"]
            return self.conv(x, c, m, b["k"], b["stride"], c if b["depthwise"] else 1, bn=b["bn"], act=b["act"])
        if kind == "inverted":
            e = c * b["expand"]
            y = self.conv(x, c, e, 1, bn=True, act=b["act"]) if b["expand"] > 1 else x
            y = self.conv(y, e, e, b["k"], b["stride"], e, bn=True, act=b["act"])
            if b["se"]:
                y = self.se(y, e, b["se"])
            y = self.conv(y, e, b["m"], 1, bn=True)
            return self.residual(x, y, False) if b["stride"] == 1 and b["m"] == c else y
        if kind == "se":
            return self.se(x, c, b)
        if kind == "fire":
            s = self.conv(x, c, b["squeeze"], 1, act="Relu")
            return self.node("Concat", [self.conv(s, b["squeeze"], b["e1"], 1, act="Relu"),
                                        self.conv(s, b["squeeze"], b["e3"], 3, act="Relu")], axis=1)
        if kind == "residual":
            y = self.conv(x, c, c, 3, bn=b["bn"], act=b["act"])
            y = self.conv(y, c, c, 3, bn=b["bn"])
            return self.activation(self.residual(x, y, b["first"]), b["act"])
        if kind == "pool":
            return self.node(b["op"], [x], kernel_shape=[b["k"]] * 2, strides=[b["stride"]] * 2,
                             pads=[b["pad"]] * 4)
        if kind == "shuffle":
            groups = b["groups"]
            if b["grouped_conv"]:
                x = self.conv(x, c, c, 1, group=groups, act="Relu")
            y = self.node("Reshape", [x, self.g.ints(self.name("shape"), [n, groups, c // groups, h * w])])
            y = self.node("Transpose", [y], perm=[0, 2, 1, 3])
            return self.node("Reshape", [y, self.g.ints(self.name("shape"), [n, c, h, w])])
        if kind == "head":
            y = self.node("Flatten", [self.node("GlobalAveragePool", [x])], axis=1)
            y = self.node("Gemm", [y, self.g.weights(self.name("fc"), [c, b["classes"]], c),
                                   self.g.constant(self.name("fc_b"), self.g.rng.uniform(-0.5, 0.5, [b["classes"]]))])
            return self.node("Softmax", [y], axis=1) if b["softmax"] else y
        raise ValueError(f"no such block {kind}")


def emit(g, spec):
    """Add the network's nodes to ``g`` (fuzz/spec.py's _Graph); returns the output."""
    net, shape = _Net(g), spec["x"]
    current = g.tensor_input("x", shape)
    for block in spec["network"]:
        current = net.block(current, shape, block)
        shape = block_output(block, shape)
    return current


def anchors_of(spec):
    """The blocks' kinds, for the fuzzer's failure signature."""
    return [b["block"] for b in spec["network"]]
