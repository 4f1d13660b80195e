"""Fuse chains of elementwise ops into the epilogue of the kernel before them.

``Conv -> Relu`` becomes one Conv whose kernel applies Relu to each result before storing
it: one pass over memory instead of two, and one buffer less to plan. Any chain fuses, of
any length: unary ops (activations) into any kernel that takes an epilogue, and binary ops
(a residual Add, a per-channel Mul) into a Conv, Gemm, MatMul or binary-op kernel when
the second operand's offset is linear in that kernel's loop counters (ops/common/epilogue.py).
The second operand is appended to the kernel node's inputs.
"""

from onnxcc import ops
from onnxcc.ops.common.epilogue import BINARY, binary_entry, epilogue_of, operand_strides
from onnxcc.ops.unary import EXPRESSIONS, unary_chain

#: ops whose kernels apply a unary epilogue
PRODUCERS = {"Conv", "Gemm", "MatMul", "Add", "Sub", "Mul", "Div"} | set(EXPRESSIONS)


def _fusable(graph, producer, x, consumers, op):
    """Whether the op reading ``x`` (``producer``'s output) can run in its epilogue."""
    return (producer is not None and producer.op in PRODUCERS
            and graph.sole_reader(x, consumers) is not None
            and graph.info(x).dtype == "float32"
            and (op in EXPRESSIONS or producer.op in ops.EPILOGUE_SPANS))


def _fuse_unary(graph, act, consumers, producers, position):
    x = act.inputs[0]
    p = producers.get(x)
    if not _fusable(graph, p, x, consumers, act.op) \
            or graph.info(act.outputs[0]).dtype != "float32":  # (Cast, IsNaN, ... to other types)
        return False
    p.attrs["onnxcc_epilogue"] = epilogue_of(p) + unary_chain(act)
    p.outputs = [act.outputs[0]]
    producers[act.outputs[0]] = p
    del producers[x], consumers[x], position[id(act)]
    return True


def _fuse_binary(graph, node, consumers, producers, position):
    """Fuse ``node`` (x OP other) into the producer of x, the later one when both sides
    could go; the fused kernel runs where ``node`` ran, after ``other`` is computed."""
    if len(node.inputs) != 2 or node.inputs[0] == node.inputs[1] or epilogue_of(node):
        return False
    out = graph.info(node.outputs[0])
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
        if best is None or position[id(p)] > position[id(best[0])]:
            best = (p, side, other)
    if best is None:
        return False
    p, side, other = best
    x = node.inputs[side]
    p.attrs["onnxcc_epilogue"] = epilogue_of(p) + [binary_entry(node.op, side == 0)]
    p.inputs = p.inputs + [other]
    p.outputs = [node.outputs[0]]
    consumers[other] = [p if c is node else c for c in consumers[other]]
    producers[node.outputs[0]] = p
    del producers[x], consumers[x]
    position[id(p)] = position.pop(id(node))  # p runs where node ran
    return True


def fuse_elementwise(graph):
    """One pass in schedule order, keeping the producer and consumer maps up to date as
    nodes fuse (linear in the graph): a node's producers come before it, so every fusion
    that could feed it has happened when it is visited, and a node that cannot fuse then
    never can (later fusions change neither its producer's op nor its input's readers)."""
    consumers, producers = graph.consumers(), graph.producers()
    position = {id(n): k for k, n in enumerate(graph.nodes)}  # a fused node's slot goes
    for node in list(graph.nodes):
        if node.op in EXPRESSIONS:
            _fuse_unary(graph, node, consumers, producers, position)
        elif node.op in BINARY:
            _fuse_binary(graph, node, consumers, producers, position)
    graph.nodes = sorted((n for n in graph.nodes if id(n) in position), key=lambda n: position[id(n)])
    return graph
