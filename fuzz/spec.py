"""Random valid graphs for the differential fuzzer, as plain JSON-able specs.

A *spec* describes one small graph: an anchor (a convolution, Gemm, MatMul, pooling,
broadcasting binary op, or nothing) followed by a chain of elementwise ops -- exactly what
the optimizer fuses into a kernel's epilogue -- plus the tactics to force and whether to
fuse. Specs are drawn by Hypothesis strategies (``specs()``), so a failing one shrinks to
a minimal reproducer; ``build_model(spec)`` turns a spec into an ONNX model, the same
bytes every time (weights come from the spec's seed), so a spec saved as JSON replays.

As NNSmith does, the ops know their valid inputs: shapes are drawn so that every
attribute combination is legal, ops that are undefined somewhere (Log, Sqrt, Reciprocal,
Acos, ...) are guarded by an op that maps into their domain, growth (Exp, Sinh) is
bounded by a Clip before it, and nothing divides by a computed value, so no NaN or Inf can
hide a difference. Shapes favour tails: odd channel counts and sizes that are no
multiple of any vector width or tile.
"""

import hashlib
import json

import numpy as np
import onnx
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

OPSET = 20

#: unary ops defined and finite on every finite input: op -> attribute strategy
SAFE_UNARY = {
    "Relu": st.just({}),
    "LeakyRelu": st.fixed_dictionaries({"alpha": st.sampled_from([0.01, 0.1, 0.3, 1.5])}),
    "Elu": st.fixed_dictionaries({"alpha": st.sampled_from([0.5, 1.0, 2.0])}),
    "Selu": st.just({}),
    "Celu": st.fixed_dictionaries({"alpha": st.sampled_from([0.5, 1.0, 2.0])}),
    "Sigmoid": st.just({}),
    "HardSigmoid": st.fixed_dictionaries({"alpha": st.sampled_from([0.2, 0.1, 0.5]),
                                          "beta": st.sampled_from([0.5, 0.3, 0.6])}),
    "HardSwish": st.just({}),
    "Tanh": st.just({}),
    "Softsign": st.just({}),
    "Softplus": st.just({}),
    "Neg": st.just({}),
    "Abs": st.just({}),
    "Erf": st.just({}),
    "Sin": st.just({}),
    "Cos": st.just({}),
    "Atan": st.just({}),
    "Asinh": st.just({}),
    "Mish": st.just({}),
    "Gelu": st.fixed_dictionaries({"approximate": st.sampled_from(["none", "tanh"])}),
    "Clip": st.sampled_from([{"min": -1.0, "max": 1.0}, {"min": 0.0, "max": 6.0},
                             {"min": -0.5}, {"max": 0.25}]),
}

#: ops defined on part of the line, and the steps that bring any value into it
GUARDED_UNARY = {
    "Exp": [["Clip", {"min": -6.0, "max": 6.0}]],
    "Sinh": [["Clip", {"min": -4.0, "max": 4.0}]],
    "Cosh": [["Clip", {"min": -4.0, "max": 4.0}]],
    "Sqrt": [["Abs", {}]],
    "Log": [["Abs", {}], ["Add", {"const": 0.5}]],
    "Reciprocal": [["Abs", {}], ["Add", {"const": 0.5}]],
    "Asin": [["Tanh", {}]],
    "Acos": [["Tanh", {}]],
    "Atanh": [["Tanh", {}], ["Mul", {"const": 0.9}]],
    "Acosh": [["Abs", {}], ["Add", {"const": 1.5}]],
}

#: elementwise binary ops with a second operand; Div only divides by that operand, whose
#: elements are kept away from zero
BINARY = ["Add", "Sub", "Mul", "Div", "Max", "Min"]

#: the tactics the fuzzer forces, per op type (ops/: TACTICS)
TACTICS = {
    "Conv": ["direct", "gemm1x1", "im2col", "implicit", "depthwise"],
    "Gemm": ["reference", "blocked"],
    "MatMul": ["reference", "blocked"],
    "MaxPool": ["reference", "vector"], "AveragePool": ["reference", "vector"],
    "GlobalAveragePool": ["reference", "vector"], "GlobalMaxPool": ["reference", "vector"],
    "Add": ["reference", "vector"], "Sub": ["reference", "vector"],
    "Mul": ["reference", "vector"], "Div": ["reference", "vector"],
}

small = st.integers(1, 9)


@st.composite
def conv_anchor(draw):
    spatial = draw(st.sampled_from([2, 2, 2, 1]))
    n = draw(st.integers(1, 2))
    kind = draw(st.sampled_from(["dense", "dense", "depthwise", "grouped", "pointwise"]))
    group = 1
    if kind == "depthwise":
        c = draw(st.integers(1, 12))
        group, m = c, c * draw(st.sampled_from([1, 1, 2]))
    elif kind == "grouped":
        group = draw(st.integers(2, 3))
        c, m = group * draw(st.integers(1, 3)), group * draw(st.integers(1, 4))
    else:
        c, m = draw(st.integers(1, 9)), draw(st.integers(1, 19))
    sizes = [draw(st.integers(1, 13)) for _ in range(spatial)]
    if kind == "pointwise":
        kernel, strides, dilations, pads = [1] * spatial, [1] * spatial, [1] * spatial, [0] * 2 * spatial
        strides = [draw(st.sampled_from([1, 1, 2])) for _ in range(spatial)]
    else:
        kernel = [draw(st.integers(1, 5)) for _ in range(spatial)]
        strides = [draw(st.integers(1, 3)) for _ in range(spatial)]
        dilations = [draw(st.sampled_from([1, 1, 1, 2])) for _ in range(spatial)]
        pads = [draw(st.integers(0, 2)) for _ in range(2 * spatial)]
    for d in range(spatial):  # every window must fit the padded input
        span = dilations[d] * (kernel[d] - 1) + 1
        sizes[d] = max(sizes[d], span - pads[d] - pads[d + spatial])
    attrs = {"kernel_shape": kernel, "strides": strides, "dilations": dilations, "pads": pads,
             "group": group}
    return {"op": "Conv", "x": [n, c] + sizes, "w": [m, c // group] + kernel, "attrs": attrs,
            "bias": draw(st.booleans()), "batchnorm": draw(st.sampled_from([False, False, True])),
            "weight_input": draw(st.sampled_from([False] * 9 + [True]))}


@st.composite
def gemm_anchor(draw):
    m, k, n = draw(st.integers(1, 17)), draw(st.integers(1, 40)), draw(st.integers(1, 37))
    trans_a, trans_b = draw(st.booleans()), draw(st.booleans())
    bias = draw(st.sampled_from([None, [n], [1, n], [m, n], [m, 1], []]))
    return {"op": "Gemm", "x": [k, m] if trans_a else [m, k], "w": [n, k] if trans_b else [k, n],
            "attrs": {"transA": int(trans_a), "transB": int(trans_b),
                      "alpha": draw(st.sampled_from([1.0, 1.0, 0.5])),
                      "beta": draw(st.sampled_from([1.0, 1.0, 2.0]))},
            "bias": bias, "weight_input": draw(st.sampled_from([False] * 5 + [True]))}


@st.composite
def matmul_anchor(draw):
    m, k, n = draw(st.integers(1, 17)), draw(st.integers(1, 40)), draw(st.integers(1, 37))
    batch = draw(st.sampled_from([[], [], [2], [3], [2, 2]]))
    w_batch = draw(st.sampled_from([[], batch[-1:], batch])) if batch else []
    return {"op": "MatMul", "x": batch + [m, k], "w": w_batch + [k, n], "attrs": {},
            "weight_input": draw(st.sampled_from([False] * 3 + [True]))}


@st.composite
def pool_anchor(draw):
    op = draw(st.sampled_from(["MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"]))
    n, c = draw(st.integers(1, 2)), draw(st.integers(1, 11))
    sizes = [draw(st.integers(1, 14)) for _ in range(2)]
    attrs = {}
    if op in ("MaxPool", "AveragePool"):
        kernel = [draw(st.integers(1, 4)) for _ in range(2)]
        pads = [draw(st.integers(0, k - 1)) for k in kernel * 2]  # a pad smaller than the window
        attrs = {"kernel_shape": kernel, "strides": [draw(st.integers(1, 3)) for _ in range(2)],
                 "pads": pads}
        if op == "AveragePool":
            attrs["count_include_pad"] = int(draw(st.booleans()))
        for d in range(2):
            sizes[d] = max(sizes[d], kernel[d] - pads[d] - pads[d + 2])
    return {"op": op, "x": [n, c] + sizes, "attrs": attrs}


@st.composite
def binary_anchor(draw):
    shape = draw(st.lists(st.integers(1, 13), min_size=1, max_size=4))
    other = draw(broadcast_shape(shape))
    return {"op": draw(st.sampled_from(["Add", "Sub", "Mul"])), "x": shape, "other": other,
            "attrs": {}}


@st.composite
def broadcast_shape(draw, shape):
    """A shape that broadcasts to ``shape``: a suffix with some dimensions set to 1."""
    keep = draw(st.integers(0, len(shape)))
    suffix = shape[len(shape) - keep:]
    return [d if draw(st.booleans()) else 1 for d in suffix]


@st.composite
def chain(draw, shape, channel_axis):
    """Elementwise steps after the anchor, each [op, attrs]; binary steps name an operand
    shape (broadcast to ``shape``), whether it is a constant or a graph input and its side."""
    steps = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["safe", "safe", "guarded", "binary"]))
        if kind == "safe":
            op = draw(st.sampled_from(sorted(SAFE_UNARY)))
            steps.append([op, draw(SAFE_UNARY[op])])
        elif kind == "guarded":
            op = draw(st.sampled_from(sorted(GUARDED_UNARY)))
            steps += [list(s) for s in GUARDED_UNARY[op]] + [[op, {}]]
        else:
            op = draw(st.sampled_from(BINARY))
            per_channel = [1] * len(shape)
            if channel_axis is not None:
                per_channel[channel_axis] = shape[channel_axis]
                per_channel = per_channel[channel_axis:]
            operand = draw(st.one_of(st.just(list(shape)), st.just([]), st.just(per_channel),
                                     broadcast_shape(shape)))
            source = "const" if op == "Div" else draw(st.sampled_from(["const", "const", "input"]))
            steps.append([op, {"shape": operand, "source": source,
                               "value_first": op == "Div" or draw(st.booleans())}])
    return steps


@st.composite
def specs(draw, tactics=True):
    anchor = draw(st.one_of(conv_anchor(), gemm_anchor(), matmul_anchor(), pool_anchor(),
                            binary_anchor(), st.just({"op": None})))
    if anchor["op"] is None:
        anchor["x"] = draw(st.lists(st.integers(1, 21), min_size=1, max_size=4))
    shape, channel_axis = anchor_output(anchor)
    spec = {"anchor": anchor, "chain": draw(chain(shape, channel_axis)),
            "seed": draw(st.integers(0, 2**31 - 1))}
    if tactics:
        # the anchor's tactic, and the chain's when it is not fused away; a forced op type
        # that no node keeps makes the build refuse, which the fuzzer counts apart
        spec["fuse"] = draw(st.booleans())
        ops = {anchor["op"]} | (set() if spec["fuse"] else {op for op, _ in spec["chain"]})
        spec["tactic"] = {op: draw(st.sampled_from(tactics_for(anchor, op)))
                          for op in sorted(ops & set(TACTICS))}
    return spec


def tactics_for(anchor, op):
    """The tactics worth forcing on ``op``: a convolution's that its structure allows."""
    if op != "Conv" or anchor["op"] != "Conv":
        return TACTICS[op]
    group, kernel = anchor["attrs"]["group"], anchor["attrs"]["kernel_shape"]
    depthwise = group > 1 and group == anchor["x"][1] == anchor["w"][0]
    return [t for t in TACTICS[op] if (t != "depthwise" or depthwise)
            and (t != "gemm1x1" or all(k == 1 for k in kernel))]


def anchor_output(anchor):
    """(the anchor's output shape, its channel axis or None)."""
    op, x, a = anchor["op"], anchor.get("x"), anchor.get("attrs", {})
    if op == "Conv":
        spatial = len(x) - 2
        out = [x[0], anchor["w"][0]]
        for d in range(spatial):
            span = a["dilations"][d] * (a["kernel_shape"][d] - 1) + 1
            out.append((x[2 + d] + a["pads"][d] + a["pads"][d + spatial] - span) // a["strides"][d] + 1)
        return out, 1
    if op in ("MaxPool", "AveragePool"):
        out = [x[0], x[1]]
        for d in range(2):
            out.append((x[2 + d] + a["pads"][d] + a["pads"][d + 2] - a["kernel_shape"][d]) // a["strides"][d] + 1)
        return out, 1
    if op in ("GlobalAveragePool", "GlobalMaxPool"):
        return x[:2] + [1, 1], 1
    if op == "Gemm":
        m = x[1] if a["transA"] else x[0]
        n = anchor["w"][0] if a["transB"] else anchor["w"][1]
        return [m, n], 1
    if op == "MatMul":
        w = anchor["w"]
        batch = list(np.broadcast_shapes(tuple(x[:-2]), tuple(w[:-2])))
        return batch + [x[-2], w[-1]], len(batch) + 1
    if op in ("Add", "Sub", "Mul"):
        return list(np.broadcast_shapes(tuple(x), tuple(anchor["other"]))), None
    return list(x), None


def spec_name(spec):
    """A short C-safe name that identifies the spec."""
    digest = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()
    return f"g{digest[:10]}"


def build_model(spec):
    """The ONNX model of ``spec``: graph inputs x (and any input operands), one output y."""
    rng = np.random.default_rng(spec["seed"])
    anchor = spec["anchor"]
    inputs, inits, nodes = [], [], []

    def tensor_input(name, shape):
        inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, shape))
        return name

    def constant(name, array):
        inits.append(numpy_helper.from_array(np.asarray(array, np.float32), name))
        return name

    def weights(name, shape, fan_in, as_input=False):
        if as_input:
            return tensor_input(name, shape)
        return constant(name, rng.uniform(-1, 1, shape) / np.sqrt(max(fan_in, 1)))

    op = anchor["op"]
    current = tensor_input("x", anchor["x"])
    if op == "Conv":
        w = anchor["w"]
        args = [current, weights("w", w, int(np.prod(w[1:])), anchor["weight_input"])]
        if anchor["bias"]:
            args.append(constant("b", rng.uniform(-0.5, 0.5, [w[0]])))
        nodes.append(helper.make_node("Conv", args, ["conv"], name="conv", **anchor["attrs"]))
        current = "conv"
        if anchor["batchnorm"]:
            m = w[0]
            bn = [constant("bn_scale", rng.uniform(0.5, 1.5, [m])),
                  constant("bn_bias", rng.uniform(-0.5, 0.5, [m])),
                  constant("bn_mean", rng.uniform(-0.5, 0.5, [m])),
                  constant("bn_var", rng.uniform(0.5, 1.5, [m]))]
            nodes.append(helper.make_node("BatchNormalization", [current] + bn, ["bn"], name="bn"))
            current = "bn"
    elif op in ("Gemm", "MatMul"):
        k = anchor["x"][0] if anchor["attrs"].get("transA") else anchor["x"][-1]
        args = [current, weights("w", anchor["w"], k, anchor["weight_input"])]
        if op == "Gemm" and anchor["bias"] is not None:
            args.append(constant("c", rng.uniform(-0.5, 0.5, anchor["bias"])))
        nodes.append(helper.make_node(op, args, ["mm"], name="mm", **anchor["attrs"]))
        current = "mm"
    elif op in ("MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"):
        nodes.append(helper.make_node(op, [current], ["pool"], name="pool", **anchor["attrs"]))
        current = "pool"
    elif op in ("Add", "Sub", "Mul"):
        other = tensor_input("x2", anchor["other"])
        nodes.append(helper.make_node(op, [current, other], ["binary"], name="binary"))
        current = "binary"

    for k, (step, attrs) in enumerate(spec["chain"]):
        out = f"t{k}"
        if step in BINARY and "const" in attrs:
            operand = constant(f"k{k}", attrs["const"])
            nodes.append(helper.make_node(step, [current, operand], [out], name=f"s{k}"))
        elif step in BINARY:
            shape = attrs["shape"]
            if attrs["source"] == "input":
                operand = tensor_input(f"e{k}", shape)
            elif step == "Div":  # |divisor| in [0.5, 2]
                operand = constant(f"k{k}", rng.uniform(0.5, 2.0, shape) * rng.choice([-1, 1], shape))
            else:
                operand = constant(f"k{k}", rng.uniform(-1, 1, shape))
            pair = [current, operand] if attrs["value_first"] else [operand, current]
            nodes.append(helper.make_node(step, pair, [out], name=f"s{k}"))
        elif step == "Clip":  # its bounds are inputs since opset 11
            bounds = [constant(f"k{k}_{b}", attrs[b]) if b in attrs else "" for b in ("min", "max")]
            nodes.append(helper.make_node(step, [current] + bounds, [out], name=f"s{k}"))
        else:
            nodes.append(helper.make_node(step, [current], [out], name=f"s{k}", **attrs))
        current = out
    if not nodes:
        nodes.append(helper.make_node("Relu", [current], ["y"], name="s0"))
    nodes[-1].output[0] = "y"
    graph = helper.make_graph(nodes, spec_name(spec), inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="onnxcc-fuzz")
    model.ir_version = 9
    model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    onnx.checker.check_model(model, full_check=True)
    return model
