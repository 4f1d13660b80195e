"""BatchNormalization folded into the Conv or Gemm before it; any other one becomes a
per-channel Mul and Add with constants computed here.

y = (x - mean) / sqrt(var + eps) * scale + bias  =  x * s + (bias - mean * s),
s = scale / sqrt(var + eps); a Conv's filter m (or a Gemm's output column m) is scaled by s[m].
"""

import numpy as np

from onnxcc.core.ir import Names, Node, TensorInfo


def _affine(graph, bn):
    scale, bias, mean, var = (graph.constants[i].astype(np.float64) for i in bn.inputs[1:5])
    s = scale / np.sqrt(var + bn.attrs.get("epsilon", 1e-5))
    return s, bias - mean * s


def _fold_into_conv(graph, names, conv, s, t):
    w = graph.constants[conv.inputs[1]].astype(np.float64)
    b = (graph.constants[conv.inputs[2]].astype(np.float64)
         if len(conv.inputs) > 2 and conv.inputs[2] else np.zeros(w.shape[0]))
    w_name = names.unique(conv.inputs[1] + "_bn")
    b_name = names.unique(conv.name + "_bias_bn")
    graph.add_constant(w_name, (w * s.reshape((-1,) + (1,) * (w.ndim - 1))).astype(np.float32))
    graph.add_constant(b_name, (b * s + t).astype(np.float32))
    conv.inputs = [conv.inputs[0], w_name, b_name]


def _fold_into_gemm(graph, names, gemm, s, t):
    a = gemm.attrs
    w = graph.constants[gemm.inputs[1]].astype(np.float64)
    n = w.shape[0] if a.get("transB", 0) else w.shape[1]
    if len(gemm.inputs) > 2 and gemm.inputs[2]:
        c = graph.constants[gemm.inputs[2]].astype(np.float64) * a.get("beta", 1.0)
        c = np.broadcast_to(c, np.broadcast_shapes(c.shape, (n,)))
    else:
        c = np.zeros(n)
    w = w * (s[:, None] if a.get("transB", 0) else s[None, :])
    w_name = names.unique(gemm.inputs[1] + "_bn")
    c_name = names.unique(gemm.name + "_bias_bn")
    graph.add_constant(w_name, w.astype(np.float32))
    graph.add_constant(c_name, (c * s + t).astype(np.float32))
    gemm.inputs = [gemm.inputs[0], w_name, c_name]
    gemm.attrs["beta"] = 1.0


def _foldable_producer(graph, bn, consumers, producers):
    x = bn.inputs[0]
    p = producers.get(x)
    if p is None or graph.sole_reader(x, consumers) is None:
        return None
    if p.op == "Conv" and graph.is_constant(p.inputs[1]) and \
            (len(p.inputs) < 3 or not p.inputs[2] or graph.is_constant(p.inputs[2])):
        return p
    if p.op == "Gemm" and graph.is_constant(p.inputs[1]) and not p.attrs.get("transA", 0) and \
            (len(p.inputs) < 3 or not p.inputs[2] or graph.is_constant(p.inputs[2])) and \
            len(graph.info(x).shape) == 2 and p.attrs.get("alpha", 1.0) == 1.0:
        return p
    return None


def fold_batchnorm(graph):
    bns = [n for n in graph.nodes if n.op == "BatchNormalization"]
    if not bns:  # (no need for the maps of the graph)
        graph.drop_unused_constants()
        return graph
    consumers, producers = graph.consumers(), graph.producers()
    replaced = {}  # id of a BatchNormalization -> the nodes that take its place
    names = Names(graph)
    for bn in bns:
        if not all(graph.is_constant(i) for i in bn.inputs[1:5]):
            continue
        s, t = _affine(graph, bn)
        p = _foldable_producer(graph, bn, consumers, producers)
        if p is not None:
            (_fold_into_conv if p.op == "Conv" else _fold_into_gemm)(graph, names, p, s, t)
            x = p.outputs[0]
            p.outputs = [bn.outputs[0]]
            producers[bn.outputs[0]] = p  # (x had one reader, bn: it is gone)
            producers.pop(x, None)
            consumers.pop(x, None)
            replaced[id(bn)] = []
            continue
        # on its own: x * s + t, with s and t shaped to broadcast over channel axis 1
        rank = len(graph.info(bn.inputs[0]).shape)
        shape = (-1,) + (1,) * (rank - 2)
        s_name = names.unique(bn.name + "_scale")
        graph.add_constant(s_name, s.reshape(shape).astype(np.float32))
        t_name = names.unique(bn.name + "_shift")
        graph.add_constant(t_name, t.reshape(shape).astype(np.float32))
        mid = names.unique(bn.name + "_scaled")
        graph.tensors[mid] = TensorInfo(mid, "float32", graph.info(bn.outputs[0]).shape)
        mul = Node(bn.name + "_mul", "Mul", [bn.inputs[0], s_name], [mid])
        add = Node(bn.name + "_add", "Add", [mid, t_name], [bn.outputs[0]])
        replaced[id(bn)] = [mul, add]
        producers.update({mid: mul, bn.outputs[0]: add})
        consumers[bn.inputs[0]] = [mul if c is bn else c for c in consumers.get(bn.inputs[0], [])]
        consumers[mid] = [add]
    graph.nodes = [m for n in graph.nodes for m in replaced.get(id(n), [n])]
    graph.drop_unused_constants()
    return graph
