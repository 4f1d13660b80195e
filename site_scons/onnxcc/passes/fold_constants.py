"""Evaluate at compile time every node whose inputs are known: constants and shapes.

Shape and Size of a tensor with a static shape are constants too, so exporters'
Shape -> Gather -> Concat -> Reshape chains fold away. ONNX's reference evaluator
computes the values, so folding agrees with the operator specification by construction.
"""

import numpy as np
from onnx import helper
from onnx.reference import ReferenceEvaluator

from ..errors import OnnxccError
from ..onnx_io import infer_shapes

SHAPE_OPS = {"Shape", "Size"}


def _evaluate(graph, node, where):
    if node.op in SHAPE_OPS:
        shape = np.array(graph.info(node.inputs[0]).shape, dtype=np.int64)
        if node.op == "Size":
            return [np.array(np.prod(shape), dtype=np.int64)]
        start, end = node.attrs.get("start", 0), node.attrs.get("end", None)
        return [shape[start:end]]
    proto = helper.make_node(node.op, node.inputs, node.outputs, name=node.name, **node.attrs)
    try:
        evaluator = ReferenceEvaluator(proto)
        return evaluator.run(None, {i: graph.constants[i] for i in node.inputs if i})
    except Exception as e:  # the reference evaluator raises many types
        raise OnnxccError(f"cannot fold node '{node.name}' (op {node.op}) at compile time: {e}",
                          where=where) from None


def foldable(graph, node, known=None):
    """Whether ``node`` can be computed now; ``known``: tensors taken as computed."""
    def computed(name):
        return not name or graph.is_constant(name) or (known is not None and name in known)
    if node.op in SHAPE_OPS:
        return graph.info(node.inputs[0]).shape is not None
    return all(computed(i) for i in node.inputs)


def compile_time_nodes(graph):
    """Names of the nodes folding will compute (whose inputs are constants or shapes,
    directly or through other such nodes): they need no kernel."""
    known, names = set(), set()
    for node in graph.nodes:  # topological order: a node's producers come first
        if foldable(graph, node, known):
            known.update(node.outputs)
            names.add(node.name)
    return names


def fold_constants(graph, where="graph"):
    changed = True
    while changed:
        changed = False
        for node in list(graph.nodes):
            if not foldable(graph, node):
                continue
            for name, value in zip(node.outputs, _evaluate(graph, node, where)):
                if name:
                    graph.add_constant(name, np.asarray(value))
            graph.nodes.remove(node)
            changed = True
        if changed and any(t.shape is None for t in graph.tensors.values()):
            infer_shapes(graph, where)
    unknown = [n for n in graph.nodes for o in n.outputs if o and graph.info(o).shape is None]
    if unknown:
        n = unknown[0]
        if all(graph.info(i).shape is not None for i in n.inputs if i):
            raise OnnxccError(f"the output shape of node '{n.name}' (op {n.op}) depends on the "
                              "values of its inputs", where=where,
                              hint="onnxcc compiles static shapes: make those inputs constants")
        raise OnnxccError(f"the output shape of node '{n.name}' (op {n.op}) is not static",
                          where=where, hint="fix the input shapes with input_shape=NAME:DxD...")
    graph.drop_unused_constants()
    return graph
