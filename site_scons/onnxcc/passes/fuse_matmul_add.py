"""MatMul by a constant matrix followed by Add of a constant bias -> one Gemm.

Exporters write dense layers as MatMul + Add; as a Gemm the bias costs nothing (it is
the accumulator's start) and a following BatchNormalization can fold into it.
"""


def _bias_vector(graph, add, y):
    """The Add's other operand if it is a constant broadcast along the last axis only."""
    other = [i for i in add.inputs if i != y]
    if len(other) != 1 or not graph.is_constant(other[0]):
        return None
    shape = graph.info(other[0]).shape
    n = graph.info(y).shape[-1]
    if all(d == 1 for d in shape[:-1]) and shape[-1:] in ((n,), (1,)) or shape == ():
        return other[0]
    return None


def fuse_matmul_add(graph):
    consumers, fused = graph.consumers(), set()
    for mm in graph.nodes:
        if mm.op != "MatMul" or not graph.is_constant(mm.inputs[1]):
            continue
        a, y = mm.inputs[0], mm.outputs[0]
        if len(graph.info(a).shape) != 2 or len(graph.info(mm.inputs[1]).shape) != 2:
            continue
        users = consumers.get(y, [])
        if len(users) != 1 or users[0].op != "Add" or y in graph.outputs:
            continue
        add = users[0]
        bias = _bias_vector(graph, add, y)
        if bias is None:
            continue
        mm.op, mm.inputs, mm.outputs = "Gemm", [a, mm.inputs[1], bias], add.outputs
        fused.add(id(add))
    graph.nodes = [n for n in graph.nodes if id(n) not in fused]
    return graph
