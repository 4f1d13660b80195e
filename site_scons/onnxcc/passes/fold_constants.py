"""Evaluate at compile time every node whose inputs are known: constants and shapes.

Shape, Size and EyeLike of a tensor with a static shape are constants too, so exporters'
Shape -> Gather -> Concat -> Reshape chains fold away. ONNX's reference evaluator
computes the values, so folding agrees with the operator specification by construction;
where it has no implementation of the op at the model's opset (it implements
DequantizeLinear from opset 19 only, and quantizers write opset 13), onnxruntime, which
implements every opset, computes them.
"""

import numpy as np
from onnx import helper
from onnx.reference import ReferenceEvaluator

from onnxcc.core.errors import OnnxccError
from onnxcc.core.limits import MAX_FOLD_BYTES
from onnxcc.core.onnx_io import infer_shapes, node_proto
from onnxcc.core.onnxruntime_session import session

#: ops whose result depends only on the shape and element type of their input
SHAPE_OPS = {"Shape", "Size", "EyeLike"}


def _evaluate(graph, node, where):
    if node.op in SHAPE_OPS:  # the values are never read: zeros of the static shape stand in
        info = graph.info(node.inputs[0])
        feeds = {node.inputs[0]: np.zeros(info.shape, info.dtype)}
    else:
        feeds = {i: graph.constants[i] for i in node.inputs if i}
    # a one-node graph evaluated at the model's opset (operators change between opsets)
    proto = helper.make_graph([node_proto(node)], "fold", [helper.make_empty_tensor_value_info(i) for i in feeds],
                              [helper.make_empty_tensor_value_info(o) for o in node.outputs if o])
    _check_fold_size(graph, node, where)
    try:
        return ReferenceEvaluator(proto, opsets={"": graph.opset}).run(None, feeds)
    except Exception as e:  # the reference evaluator raises many types
        reason = " ".join(str(e).split())[:300] or type(e).__name__
    try:
        return _evaluate_onnxruntime(graph, node, feeds)
    except Exception:  # onnxruntime raises its own types; the reference's reason is clearer
        raise OnnxccError(f"cannot fold node '{node.name}' (op {node.op}) at compile time: "
                          f"{reason}", where=where) from None


def _evaluate_onnxruntime(graph, node, feeds):
    """The node's outputs computed by onnxruntime at the model's opset."""
    def typed(name, dtype):
        return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)),
                                             None)
    outputs = [o for o in node.outputs if o]
    proto = helper.make_graph([node_proto(node)], "fold",
                              [typed(i, v.dtype) for i, v in feeds.items()],
                              [typed(o, graph.info(o).dtype) for o in outputs])
    opsets = [helper.make_opsetid("", graph.opset)]
    model = helper.make_model(proto, opset_imports=opsets,
                              ir_version=helper.find_min_ir_version_for(opsets))
    values = dict(zip(outputs, session(model).run(outputs, feeds)))
    return [values.get(o) for o in node.outputs]


def _planned_elements(graph, node):
    """Elements of the output of an op whose output size comes from its input values
    (ConstantOfShape, Expand, Tile, Range), or that shape inference already knows;
    None when neither says (then it is not larger than its inputs)."""
    known = [graph.info(o).shape for o in node.outputs if o]
    if known and all(s is not None for s in known):
        return sum(int(np.prod(s, dtype=object)) for s in known)
    values = [graph.constants.get(i) for i in node.inputs]
    try:
        if node.op == "ConstantOfShape":
            return int(np.prod([int(d) for d in values[0].ravel()], dtype=object))
        if node.op == "Expand":
            shape = np.broadcast_shapes(values[0].shape, tuple(max(int(d), 1) for d in values[1].ravel()))
            return int(np.prod(shape, dtype=object))
        if node.op == "Tile":
            return values[0].size * int(np.prod([int(r) for r in values[1].ravel()], dtype=object))
        if node.op == "Range":
            start, limit, delta = (float(v) for v in values[:3])
            return int(max(np.ceil((limit - start) / delta), 0)) if delta else None
    except (AttributeError, IndexError, TypeError, ValueError, OverflowError):
        return None  # malformed inputs: the evaluator gives the clear error
    return None


def _check_fold_size(graph, node, where):
    """Refuse a compile-time evaluation that would allocate more than MAX_FOLD_BYTES."""
    count = _planned_elements(graph, node)
    if count is not None and count * 8 > MAX_FOLD_BYTES:  # 8: the widest element type
        raise OnnxccError(f"node '{node.name}' (op {node.op}) would make a constant of "
                          f"{count} elements at compile time, more than the limit of "
                          f"{MAX_FOLD_BYTES} bytes", where=where,
                          hint="onnxcc computes constant subgraphs at compile time; "
                               "this one is too large for a model that fits a small device")


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
        folded = set()
        for node in graph.nodes:
            if not foldable(graph, node):
                continue
            for name, value in zip(node.outputs, _evaluate(graph, node, where)):
                if name:
                    graph.add_constant(name, np.asarray(value))
            folded.add(id(node))
            changed = True
        graph.nodes = [n for n in graph.nodes if id(n) not in folded]
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
