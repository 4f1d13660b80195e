"""Turn QDQ groups (DequantizeLinear -> float op -> QuantizeLinear) into integer ops.

The same groups onnxruntime fuses when graph optimizations are on (its default), into
the same integer ops (QLinearConv, QGemm, QLinearAdd, QLinearMul, QLinearAveragePool,
QLinearGlobalAveragePool, QLinearSoftmax, QLinearConcat, QLinearSigmoid,
QLinearLeakyRelu), so that both compute the same integers; and Tanh, HardSigmoid and
HardSwish, which onnxruntime runs in float between the DQ and Q, as tables of its float32
arithmetic (the same integers, for each of the 256 codes). A Relu or Clip between the op
and its QuantizeLinear becomes the integer output range (exact: quantization is monotonic). Ops that only move data (the reshape
family, Transpose) between equal quantizations run on the integers directly.

MaxPool and GlobalMaxPool run on the integers (max commutes with the monotonic
dequantize and quantize, so the result is exactly onnxruntime's, whether it drops the Q/DQ
pair, as it does for equal quantizations, or runs the float op); a different output
quantization, or a Relu / Clip after, becomes a 256-entry table after the integer pool
(QLinearRequantize, QLinearConcat's table).

A ReduceMean over H x W (what the dynamo exporter writes for a global average pool)
becomes QLinearGlobalAveragePool too, with onnxruntime's float steps (it does not fuse it).

ConvInteger and MatMulInteger (int32 outputs) keep their op; their zero points move onto
the tensors too.

Every quantized tensor gets its parameters in ``TensorInfo.quant``; the integer ops take
only their data inputs (QLinearConv and QGemm with per-channel weights also take their
requantization multipliers and shifts, constants computed here). What does not match stays float, with explicit QuantizeLinear /
DequantizeLinear kernels (single-input nodes, parameters on the integer tensor); a
DequantizeLinear of a constant is left for fold_constants (it becomes a float constant).
"""

import dataclasses

import numpy as np

from onnxcc.core.ir import Names, Node, TensorInfo
from onnxcc.core.quant import fixed_point, int_range, make_quant, output_scales

from .ort_groups import FLOAT_STEPS, ORT_ARITHMETIC, QOPERATOR_ATTR, U8_CODES, ort_types
from .remove_noops import prune_unused

MOVERS = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose"}
UNARY = {"AveragePool": "QLinearAveragePool", "GlobalAveragePool": "QLinearGlobalAveragePool",
         "Softmax": "QLinearSoftmax", "Sigmoid": "QLinearSigmoid", "LeakyRelu": "QLinearLeakyRelu",
         # not fused by onnxruntime: its float op then QuantizeLinear, which the table of
         # every code computes at compile time with its float32 arithmetic (core/quant.py)
         "Tanh": "QLinearTanh", "HardSigmoid": "QLinearHardSigmoid", "HardSwish": "QLinearHardSwish"}
#: ops that commute with quantization (monotonic): they run on the codes
MAX_POOLS = {"MaxPool", "GlobalMaxPool"}
QUANT_OPS = {"QuantizeLinear", "DequantizeLinear"}
INTEGER_OPS = {"ConvInteger", "MatMulInteger"}


class _Matcher:
    def __init__(self, graph):
        self.g = graph
        self.producers, self.consumers = graph.producers(), graph.consumers()
        self.names = Names(graph)  # for the constants the pass adds (no node is renamed)

    def params(self, node):
        """The quant dict of a Q/DQ node with constant parameters, else None."""
        g = self.g
        scale = node.inputs[1]
        zp = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
        if not g.is_constant(scale) or (zp and not g.is_constant(zp)):
            return None
        zp_value = g.constants[zp] if zp else np.zeros(1, np.uint8)
        if np.asarray(g.constants[scale]).size > 1:
            rank = len(g.info(node.inputs[0]).shape)
            axis = node.attrs.get("axis", 1) % rank
        else:
            axis = None
        return make_quant(g.constants[scale], zp_value, axis)

    def dq_input(self, name, constant=None):
        """(int tensor, quant) when ``name`` is a DequantizeLinear's output (of a constant
        only when ``constant``, of an activation only when ``constant`` is False)."""
        p = self.producers.get(name)
        if p is None or p.op != "DequantizeLinear" or len(p.inputs) < 2:
            return None
        quant = self.params(p)
        if quant is None or (constant is not None and self.g.is_constant(p.inputs[0]) != constant):
            return None
        return p.inputs[0], quant

    def ort_types(self, node, y):
        return ort_types(self.g, self.producers, self.consumers, node, y)

    def q_output(self, node):
        """(Q node, activation nodes between, quant) for the QuantizeLinear after ``node``."""
        between, out = [], node.outputs[0]
        user = self.g.sole_reader(out, self.consumers)
        while user is not None and user.op in ("Relu", "Clip"):
            between.append(user)
            out = user.outputs[0]
            user = self.g.sole_reader(out, self.consumers)
        if user is None or user.op != "QuantizeLinear" or len(user.inputs) < 2:
            return None
        quant = self.params(user)
        if quant is None or quant["axis"] is not None:
            return None
        return user, between, quant


def _clamp(graph, acts, quant, dtype):
    """The quantized output range left by Relu / Clip (quantization is monotonic)."""
    lo, hi = int_range(dtype)
    scale, zp = np.float32(quant["scale"][0]), quant["zero_point"][0]

    def q(v):
        return int(np.clip(np.rint(np.float32(v) / scale) + zp, lo, hi))
    for act in acts:
        if act.op == "Relu":
            lo = max(lo, zp)
            continue
        bounds = [act.attrs.get("min"), act.attrs.get("max")]
        for k, name in enumerate(act.inputs[1:3]):
            if name:
                if not graph.is_constant(name):
                    return None
                bounds[k] = float(np.asarray(graph.constants[name]).reshape(-1)[0])
        if bounds[0] is not None:
            lo = max(lo, q(bounds[0]))
        if bounds[1] is not None:
            hi = min(hi, q(bounds[1]))
    return [lo, hi]


def _set_quant(graph, name, quant):
    graph.tensors[name] = dataclasses.replace(graph.tensors[name], quant=quant)


def _weights_nk(graph, names, w, trans):
    """The constant weight ``w`` as [N, K] (a transposed copy when it is [K, N])."""
    if not trans:
        return w
    name = names.unique(f"{w}_nk")
    graph.add_constant(name, np.ascontiguousarray(graph.constants[w].T))
    quant = dict(graph.info(w).quant)
    if quant["axis"] is not None:
        quant["axis"] = 1 - quant["axis"]
    _set_quant(graph, name, quant)
    return name


def _bias_ok(x, w, b):
    """An int32 bias adds to the accumulator as is only when its scale is x_scale * w_scale."""
    if not b:
        return True
    xs = np.float32(x[1]["scale"][0])
    ws = np.asarray(w[1]["scale"], np.float32)
    bs = np.asarray(b[1]["scale"], np.float32)
    return bool(np.array_equal(np.broadcast_to(bs, ws.shape), xs * ws))


def _per_column(bias_shape, out_shape):
    """Whether a Gemm bias holds one value per output column ([N] or [1, N]): QGemm's; any
    other broadcast ([M, N], [M, 1], a scalar) stays a float Gemm between DQ and Q."""
    return len(bias_shape) >= 1 and bias_shape[-1] == out_shape[-1] \
        and all(d == 1 for d in bias_shape[:-1])


def _fuse(m, node):
    """The integer node replacing ``node`` and the QuantizeLinear after it, or None."""
    g = m.g
    out = m.q_output(node)
    if out is None:
        return None
    q, acts, y_quant = out
    y = q.outputs[0]
    clamp = _clamp(g, acts, y_quant, g.info(y).dtype)
    if clamp is None:
        return None
    attrs = {k: v for k, v in node.attrs.items() if not k.startswith("onnxcc_")}
    if clamp != list(int_range(g.info(y).dtype)):
        attrs["onnxcc_clamp"] = clamp
    op, inputs = None, None
    types = m.ort_types(node, y)
    if node.op in ORT_ARITHMETIC and not node.attrs.get(QOPERATOR_ATTR) and len(types) > 1:
        # onnxruntime runs the float ops between DQ and Q (docs/int8.md): an Add, Mul or
        # GlobalAveragePool kernel computes those same float32 steps on the codes
        if node.op == "Softmax":
            return None
        attrs[FLOAT_STEPS] = 1
    elif node.op in ("Add", "Mul") and not node.attrs.get(QOPERATOR_ATTR) \
            and types == {"uint8"} and g.info(y).dtype == "int8":
        attrs[U8_CODES] = 1  # its fused kernel adds zero points in float: as uint8 codes
    if node.op == "Conv":
        x, w = m.dq_input(node.inputs[0], False), m.dq_input(node.inputs[1], True)
        b = m.dq_input(node.inputs[2], True) if len(node.inputs) > 2 and node.inputs[2] else ()
        if x and w and b is not None and w[1]["axis"] in (None, 0) and _bias_ok(x, w, b):
            op, inputs = "QLinearConv", [x, w] + ([b] if b else [])
    elif node.op in ("Gemm", "MatMul"):
        a, w = m.dq_input(node.inputs[0], False), m.dq_input(node.inputs[1], True)
        b = m.dq_input(node.inputs[2], True) if len(node.inputs) > 2 and node.inputs[2] else ()
        trans_b = node.attrs.get("transB", 0) if node.op == "Gemm" else 0
        ok = (a and w and b is not None and _bias_ok(a, w, b) and not node.attrs.get("transA", 0)
              and (not b or _per_column(g.info(b[0]).shape, g.info(node.outputs[0]).shape))
              # QGemm scales its sum, bias included, by alpha: ONNX scales only A*B
              and (not b or node.attrs.get("alpha", 1.0) == 1.0)
              and node.attrs.get("beta", 1.0) == 1.0 and len(g.info(node.inputs[1]).shape) == 2
              and (node.op == "Gemm" or len(g.info(node.inputs[0]).shape) >= 2))
        if ok:
            _set_quant(g, w[0], w[1])
            w = (_weights_nk(g, m.names, w[0], not trans_b), None)
            op, inputs = "QGemm", [a, w] + ([b] if b else [])
            attrs = {k: v for k, v in attrs.items() if k in ("alpha", "onnxcc_clamp")}
    elif node.op in ("Add", "Mul"):
        a, b = m.dq_input(node.inputs[0]), m.dq_input(node.inputs[1])
        if a and b and a[1]["axis"] is None and b[1]["axis"] is None:
            op, inputs = f"QLinear{node.op}", [a, b]
    elif node.op in UNARY:
        x = m.dq_input(node.inputs[0], False)
        # (QLinearAveragePool's kernel has no ceil_mode or dilations: such a pool stays float)
        plain = node.op != "AveragePool" or (not node.attrs.get("ceil_mode", 0) and all(
            d == 1 for d in node.attrs.get("dilations", [1])))
        if x and x[1]["axis"] is None and plain:
            op, inputs = UNARY[node.op], [x]
    elif node.op == "Concat":
        xs = [m.dq_input(i) for i in node.inputs]
        if all(x and x[1]["axis"] is None for x in xs):
            op, inputs = "QLinearConcat", xs
    elif node.op in MOVERS:
        x = m.dq_input(node.inputs[0], False)
        if x and x[1] == y_quant and not acts:
            op, inputs = node.op, [x] + [(i, None) for i in node.inputs[1:]]
    elif node.op == "ReduceMean" and _spatial_axes(g, node):
        x = m.dq_input(node.inputs[0], False)
        if x and x[1]["axis"] is None:
            return _reduce_mean(m, node, x, (q, acts, y_quant), attrs)
    elif node.op in MAX_POOLS and not any(node.outputs[1:]):
        x = m.dq_input(node.inputs[0], False)
        if x and x[1]["axis"] is None:
            return _max_pool(m, node, x, (q, acts, y_quant), attrs)
    # their kernels have no output range: a Relu / Clip that narrows it stays float
    if op is None or op in ("QLinearSoftmax", "QLinearConcat") and "onnxcc_clamp" in attrs:
        return None
    for name, quant in inputs:
        if quant is not None:
            _set_quant(g, name, quant)
    _set_quant(g, y, y_quant)
    names = [name for name, _ in inputs]
    if op in ("QLinearConv", "QGemm") and len(g.info(names[1]).quant["scale"]) > 1:
        names = names[:3] + [""] * (3 - len(names)) + _requant_tables(m, node, names, y, attrs)
    return q, acts, [Node(node.name, op, names, [y], attrs)]


def _spatial_axes(graph, node):
    """Whether a ReduceMean averages H x W of an NCHW tensor (axes attribute or constant
    input): a global average pool."""
    axes = node.attrs.get("axes")
    if len(node.inputs) > 1 and node.inputs[1]:
        if not graph.is_constant(node.inputs[1]):
            return False
        axes = np.asarray(graph.constants[node.inputs[1]]).reshape(-1).tolist()
    return len(graph.info(node.inputs[0]).shape) == 4 and sorted(a % 4 for a in axes or []) == [2, 3]


def _reduce_mean(m, node, x, out, attrs):
    """QLinearGlobalAveragePool computing onnxruntime's float ReduceMean and QuantizeLinear
    (which it does not fuse) exactly (onnxcc_float_mean); keepdims=0: a Reshape after."""
    (g, (x_name, x_quant)), (q, acts, y_quant) = (m.g, x), out
    y = q.outputs[0]
    _set_quant(g, x_name, x_quant)
    _set_quant(g, y, y_quant)
    attrs = {"onnxcc_float_mean": 1, **{k: v for k, v in attrs.items() if k == "onnxcc_clamp"}}
    if node.attrs.get("keepdims", 1):
        return q, acts, [Node(node.name, "QLinearGlobalAveragePool", [x_name], [y], attrs)]
    pooled = m.names.unique(f"{node.outputs[0]}_pooled")
    g.tensors[pooled] = TensorInfo(pooled, g.info(y).dtype, tuple(g.info(x_name).shape[:2]) + (1, 1), y_quant)
    shape = m.names.unique(f"{node.name}_shape")
    g.add_constant(shape, np.array(g.info(y).shape, np.int64))
    return q, acts, [Node(node.name, "QLinearGlobalAveragePool", [x_name], [pooled], attrs),
                     Node(m.names.unique(f"{node.name}_reshape"), "Reshape", [pooled, shape], [y])]


def _max_pool(m, node, x, out, attrs):
    """The pool on x's codes; then, unless y's codes are the same, a table to them (the
    requantization and the range a Relu / Clip leaves: both monotonic, as max is)."""
    (g, (x_name, x_quant)), (q, acts, y_quant) = (m.g, x), out
    y = q.outputs[0]
    _set_quant(g, x_name, x_quant)
    _set_quant(g, y, y_quant)
    pool_attrs = {k: v for k, v in attrs.items() if k != "onnxcc_clamp"}
    if x_quant == y_quant and g.info(x_name).dtype == g.info(y).dtype and "onnxcc_clamp" not in attrs:
        return q, acts, [Node(node.name, node.op, [x_name], [y], pool_attrs)]
    codes = m.names.unique(f"{node.outputs[0]}_codes")
    g.tensors[codes] = TensorInfo(codes, g.info(x_name).dtype, g.info(node.outputs[0]).shape, x_quant)
    table_attrs = {k: v for k, v in attrs.items() if k == "onnxcc_clamp"}
    return q, acts, [Node(node.name, node.op, [x_name], [codes], pool_attrs),
                     Node(m.names.unique(f"{node.name}_requantize"), "QLinearRequantize",
                          [codes], [y], table_attrs)]


def _requant_tables(m, node, names, y, attrs):
    """Per-output-channel requantization multipliers and shifts, as constant tensors (in
    flash with the weights), so that layers of equal shape share one kernel."""
    graph = m.g
    x_scale = graph.info(names[0]).quant["scale"][0]
    y_scale = graph.info(y).quant["scale"][0]
    alpha = attrs.get("alpha") if node.op != "Conv" else None
    pairs = [fixed_point(s, node.name)
             for s in output_scales(x_scale, graph.info(names[1]).quant["scale"], y_scale, alpha)]
    mult = m.names.unique(f"{node.name}_requant_mult")
    graph.add_constant(mult, np.array([m for m, _ in pairs], np.int32))
    shift = m.names.unique(f"{node.name}_requant_shift")
    graph.add_constant(shift, np.array([s for _, s in pairs], np.int8))
    return [mult, shift]


def _integer_op(graph, names, node):
    """ConvInteger / MatMulInteger with constant weights and zero points: the zero points
    become the tensors' quantization (scale 1), MatMulInteger's weights [N, K]."""
    x, w = node.inputs[:2]
    zps = [node.inputs[k] if len(node.inputs) > k and node.inputs[k] else None for k in (2, 3)]
    if not graph.is_constant(w) or any(z and not graph.is_constant(z) for z in zps):
        return False
    if node.op == "MatMulInteger" and len(graph.info(w).shape) != 2:
        return False
    x_zp = graph.constants[zps[0]] if zps[0] else np.zeros(1, graph.info(x).dtype)
    w_zp = graph.constants[zps[1]] if zps[1] else np.zeros(1, graph.info(w).dtype)
    w_axis = 0 if node.op == "ConvInteger" else 1
    _set_quant(graph, x, make_quant(1.0, x_zp))
    _set_quant(graph, w, make_quant(np.ones(np.asarray(w_zp).size, np.float32), w_zp, w_axis))
    if node.op == "MatMulInteger":
        w = _weights_nk(graph, names, w, True)
    node.inputs = [x, w]
    return True


def annotate_quantization(graph):
    """TensorInfo.quant of every integer tensor a QuantizeLinear writes or a
    DequantizeLinear reads (with constant parameters)."""
    m = _Matcher(graph)
    for node in graph.nodes:
        if node.op in QUANT_OPS and len(node.inputs) > 1:
            quant = m.params(node)
            if quant is not None:
                _set_quant(graph, node.outputs[0] if node.op == "QuantizeLinear" else node.inputs[0],
                           quant)
    return graph


def qdq_to_qlinear(graph):
    if not any(n.op in QUANT_OPS or n.op in INTEGER_OPS for n in graph.nodes):
        return prune_unused(graph)  # (a float graph: no need for the matcher's maps)
    m = _Matcher(graph)
    replaced, dropped = {}, set()
    for node in graph.nodes:
        if node.op in INTEGER_OPS:
            _integer_op(graph, m.names, node)
        if node.op in QUANT_OPS or node.op in INTEGER_OPS:
            continue
        fused = _fuse(m, node)
        if fused:
            q, acts, new = fused
            replaced[node.name] = new
            dropped.update(id(n) for n in [q] + acts)
    graph.nodes = [new for n in graph.nodes if id(n) not in dropped
                   for new in replaced.get(n.name, [n])]
    # what stays float: explicit quantize / dequantize kernels of activations
    for node in graph.nodes:
        if node.op in QUANT_OPS and not graph.is_constant(node.inputs[0]):
            quant = m.params(node)
            if quant is None:
                continue
            int_side = node.outputs[0] if node.op == "QuantizeLinear" else node.inputs[0]
            _set_quant(graph, int_side, quant)
            node.inputs, node.attrs = node.inputs[:1], {}
        node.attrs.pop(QOPERATOR_ATTR, None)  # (its use ends here)
    prune_unused(graph)
    return graph
