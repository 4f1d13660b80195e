"""Import of QOperator-form models: QLinear* nodes become their QDQ equivalent.

onnxcc has one canonical form of a quantized graph, the QDQ form (DequantizeLinear ->
float op -> QuantizeLinear), which ONNX shape inference understands; the optimizer's
qdq_to_qlinear pass turns both forms back into the same integer kernels. So
``QLinearConv(x, xs, xz, w, ws, wz, ys, yz, b)`` imports as
``Q(Conv(DQ(x, xs, xz), DQ(w, ws, wz), DQ(b, xs * ws)), ys, yz)``; the contrib ops
onnxruntime's tools write (domain com.microsoft) import the same way.
"""

import numpy as np
from onnx import helper, numpy_helper

from onnxcc.core.errors import OnnxccError
from onnxcc.passes.ort_groups import QOPERATOR_ATTR

MS_DOMAIN = "com.microsoft"

#: QOperator op -> its float op (inputs: x, x_scale, x_zp, y_scale, y_zp)
UNARY = {"QLinearAveragePool": "AveragePool", "QLinearGlobalAveragePool": "GlobalAveragePool",
         "QLinearSigmoid": "Sigmoid", "QLinearLeakyRelu": "LeakyRelu", "QLinearSoftmax": "Softmax"}
#: (inputs: a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp)
BINARY = {"QLinearAdd": "Add", "QLinearMul": "Mul"}
#: attributes of the contrib ops that their float twin does not have
DROPPED_ATTRS = {"opset"}


class _Rewriter:
    def __init__(self, model, where):
        self.model, self.where = model, where
        self.inits = {i.name: i for i in model.graph.initializer}
        self.taken = {n for node in model.graph.node for n in list(node.input) + list(node.output)}
        self.taken |= set(self.inits)
        self.nodes = []
        self.float_outputs = set()  # of the float ops the QOperator nodes became

    def name(self, base):
        name, k = base, 1
        while name in self.taken:
            name, k = f"{base}_{k}", k + 1
        self.taken.add(name)
        return name

    def value(self, name, node):
        if name not in self.inits:
            raise OnnxccError(f"node '{node.name}' (op {node.op_type}): quantization parameter "
                              f"'{name}' is not a constant", where=self.where,
                              hint="onnxcc compiles statically quantized models")
        return numpy_helper.to_array(self.inits[name])

    def constant(self, base, array):
        name = self.name(base)
        init = numpy_helper.from_array(np.asarray(array), name)
        self.model.graph.initializer.append(init)
        self.inits[name] = init
        return name

    def check_constant(self, node, *names):
        for name in filter(None, names):
            self.value(name, node)

    def dq(self, x, scale, zp, axis=None):
        y = self.name(f"{x}_dequantized")
        inputs = [x, scale] + ([zp] if zp else [])
        attrs = {} if axis is None else {"axis": axis}
        self.nodes.append(helper.make_node("DequantizeLinear", inputs, [y], name=y, **attrs))
        return y

    def q(self, x, scale, zp, y):
        self.nodes.append(helper.make_node("QuantizeLinear", [x, scale] + ([zp] if zp else []), [y],
                                           name=self.name(f"{y}_quantize")))

    def float_node(self, node, op, inputs, out_base):
        y = self.name(f"{out_base}_float")
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute
                 if a.name not in DROPPED_ATTRS}
        if attrs.pop("channels_last", 0):
            raise OnnxccError(f"node '{node.name}' (op {node.op_type}): channels_last=1 is not "
                              "supported", where=self.where, hint="export the model in NCHW")
        self.nodes.append(helper.make_node(op, inputs, [y], name=node.name or y, **attrs))
        self.float_outputs.add(y)
        return y

    def bias(self, node, b, x_scale, w_scale):
        """DQ of an int32 bias, whose scale is x_scale * w_scale by definition."""
        scale = (self.value(x_scale, node).astype(np.float32)
                 * self.value(w_scale, node).astype(np.float32)).reshape(-1)
        axis = 0 if scale.size > 1 else None
        s = self.constant(f"{b}_scale", scale if scale.size > 1 else scale[0])
        return self.dq(b, s, None, axis)

    def rewrite(self, node):
        op, i, out = node.op_type, list(node.input), node.output[0]
        data = {0, 3} if op in BINARY or op in ("QLinearConv", "QLinearMatMul", "QGemm") else {0}
        if op == "QLinearConcat":
            data = set(range(2, len(i), 3))
        if op in ("QLinearConv", "QGemm"):
            data.add(8 if op == "QLinearConv" else 6)  # the int32 bias
        self.check_constant(node, *[n for k, n in enumerate(i) if k not in data])
        opt = lambda k: i[k] if len(i) > k and i[k] else None  # noqa: E731
        if op in ("QLinearConv", "QLinearMatMul"):
            w_axis = 0 if op == "QLinearConv" else -1
            w_scale = self.value(i[4], node)
            x = self.dq(i[0], i[1], i[2])
            w = self.dq(i[3], i[4], i[5], w_axis if w_scale.size > 1 else None)
            inputs = [x, w] + ([self.bias(node, opt(8), i[1], i[4])] if opt(8) else [])
            y = self.float_node(node, "Conv" if op == "QLinearConv" else "MatMul", inputs, out)
            self.q(y, i[6], i[7], out)
        elif op == "QGemm":
            trans_b = next((a.i for a in node.attribute if a.name == "transB"), 0)
            w_scale = self.value(i[4], node)
            a = self.dq(i[0], i[1], i[2])
            b = self.dq(i[3], i[4], i[5], (0 if trans_b else 1) if w_scale.size > 1 else None)
            inputs = [a, b] + ([self.bias(node, opt(6), i[1], i[4])] if opt(6) else [])
            if opt(7):
                self.q(self.float_node(node, "Gemm", inputs, out), i[7], opt(8), out)
            else:  # no output quantization: the Gemm's float output is the node's output
                self.nodes.append(helper.make_node("Gemm", inputs, [out], name=node.name or out,
                                                   **{a.name: helper.get_attribute_value(a)
                                                      for a in node.attribute}))
        elif op in BINARY:
            a, b = self.dq(i[0], i[1], i[2]), self.dq(i[3], i[4], i[5])
            self.q(self.float_node(node, BINARY[op], [a, b], out), i[6], opt(7), out)
        elif op in UNARY:
            x = self.dq(i[0], i[1], opt(2))
            self.q(self.float_node(node, UNARY[op], [x], out), i[3], opt(4), out)
        else:  # QLinearConcat
            xs = [self.dq(i[k], i[k + 1], i[k + 2]) for k in range(2, len(i), 3)]
            self.q(self.float_node(node, "Concat", xs, out), i[0], i[1], out)


QOPERATOR_OPS = {"QLinearConv", "QLinearMatMul", "QGemm", "QLinearConcat"} | set(UNARY) | set(BINARY)


def _is_qoperator(node):
    return node.op_type in QOPERATOR_OPS and node.domain in ("", "ai.onnx", MS_DOMAIN)


def qoperator_to_qdq(model, where):
    """Rewrite ``model`` (a ModelProto) in place; the outputs of the float ops its
    QOperator nodes became (mark_qoperator marks them once the graph is built)."""
    if not any(_is_qoperator(node) for node in model.graph.node):
        return set()  # (no need for the rewriter's table of every name)
    r = _Rewriter(model, where)
    for node in model.graph.node:
        if _is_qoperator(node):
            r.rewrite(node)
        else:
            r.nodes.append(node)
    del model.graph.node[:]
    model.graph.node.extend(r.nodes)
    imports = [o for o in model.opset_import if o.domain != MS_DOMAIN]
    del model.opset_import[:]
    model.opset_import.extend(imports)
    return r.float_outputs


def mark_qoperator(graph, float_outputs):
    for node in graph.nodes:
        if node.outputs and node.outputs[0] in float_outputs:
            node.attrs[QOPERATOR_ATTR] = 1
