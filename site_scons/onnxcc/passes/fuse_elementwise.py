"""Fuse chains of elementwise ops into the epilogue of the kernel before them.

``Conv -> Relu`` becomes one Conv whose kernel applies Relu to each result before storing
it: one pass over memory instead of two, and one buffer less to plan. Any chain fuses, of
any length: unary ops (activations) into any kernel that takes an epilogue, and binary ops
(a residual Add, a per-channel Mul) into a Conv, Gemm, MatMul or binary-op kernel when
the second operand's offset is linear in that kernel's loop counters (ops/epilogue.py).
The second operand is appended to the kernel node's inputs.
"""

from .. import ops
from ..ops.epilogue import BINARY, binary_entry, epilogue_of, operand_strides
from ..ops.unary import EXPRESSIONS, unary_chain

#: ops whose kernels apply a unary epilogue
PRODUCERS = {"Conv", "Gemm", "MatMul", "Add", "Sub", "Mul", "Div"} | set(EXPRESSIONS)


def _fusable(graph, producer, x, consumers, op):
    """Whether the op reading ``x`` (``producer``'s output) can run in its epilogue."""
    return (producer is not None and producer.op in PRODUCERS
            and len(consumers.get(x, [])) == 1 and x not in graph.outputs
            and graph.info(x).dtype == "float32"
            and (op in EXPRESSIONS or producer.op in ops.EPILOGUE_SPANS))


def _fuse_unary(graph, act, consumers, producers):
    p = producers.get(act.inputs[0])
    if not _fusable(graph, p, act.inputs[0], consumers, act.op) \
            or graph.info(act.outputs[0]).dtype != "float32":  # (Cast, IsNaN, ... to other types)
        return False
    p.attrs["onnxcc_epilogue"] = epilogue_of(p) + unary_chain(act)
    p.outputs = [act.outputs[0]]
    graph.nodes.remove(act)
    return True


def _fuse_binary(graph, node, consumers, producers):
    """Fuse ``node`` (x OP other) into the producer of x, the later one when both sides
    could go; the fused kernel runs where ``node`` ran, after ``other`` is computed."""
    if len(node.inputs) != 2 or node.inputs[0] == node.inputs[1] or epilogue_of(node):
        return False
    out = graph.info(node.outputs[0])
    order = {id(n): k for k, n in enumerate(graph.nodes)}
    best = None
    for side in (0, 1):
        x, other = node.inputs[side], node.inputs[1 - side]
        p = producers.get(x)
        if not _fusable(graph, p, x, consumers, node.op) or out.dtype != "float32" \
                or graph.info(x).shape != out.shape or graph.info(other).dtype != "float32":
            continue
        spans = ops.EPILOGUE_SPANS[p.op](p, graph)
        if operand_strides(spans, out.shape, graph.info(other).shape) is None:
            continue
        if best is None or order[id(p)] > order[id(best[0])]:
            best = (p, side, other)
    if best is None:
        return False
    p, side, other = best
    p.attrs["onnxcc_epilogue"] = epilogue_of(p) + [binary_entry(node.op, side == 0)]
    p.inputs = p.inputs + [other]
    p.outputs = [node.outputs[0]]
    graph.nodes.remove(p)
    graph.nodes[graph.nodes.index(node)] = p
    return True


def fuse_elementwise(graph):
    changed = True
    while changed:
        changed = False
        consumers, producers = graph.consumers(), graph.producers()
        for node in graph.nodes:
            if node.op in EXPRESSIONS:
                changed = _fuse_unary(graph, node, consumers, producers)
            elif node.op in BINARY:
                changed = _fuse_binary(graph, node, consumers, producers)
            if changed:
                break
    return graph
