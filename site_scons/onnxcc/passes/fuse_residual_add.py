"""Fuse a residual Add into the Conv before it: ``y = act2(act1(conv(x)) + r)`` in one kernel.

The Conv then reads ``r`` element by element right before it writes the same element of
``y``, so the memory planner can let it write ``y`` over ``r`` when ``r`` dies there (a
ResNet block then needs two feature maps at once instead of three). The fused Conv takes
``r`` as a fourth input and the Add as an ``Add`` entry of its epilogue; it moves to the
Add's place in the graph, where ``r`` exists.
"""


def _fusable(graph, add, consumers, producers):
    """(conv, residual) when the Add sums a Conv's only use with a tensor of its shape."""
    if add.op != "Add" or len(add.inputs) != 2 or add.inputs[0] == add.inputs[1]:
        return None
    y = add.outputs[0]
    if any(graph.info(t).shape != graph.info(y).shape or graph.info(t).dtype != "float32"
           for t in add.inputs):
        return None
    for c, r in (add.inputs, reversed(add.inputs)):
        conv = producers.get(c)
        if conv is not None and conv.op == "Conv" and len(conv.inputs) <= 3 \
                and len(consumers.get(c, [])) == 1 and c not in graph.outputs:
            return conv, r
    return None


def fuse_residual_add(graph):
    consumers, producers = graph.consumers(), graph.producers()
    for add in list(graph.nodes):
        found = _fusable(graph, add, consumers, producers)
        if found is None:
            continue
        conv, residual = found
        bias = conv.inputs[2] if len(conv.inputs) > 2 else ""
        conv.inputs = conv.inputs[:2] + [bias, residual]
        conv.attrs["onnxcc_epilogue"] = (conv.attrs.get("onnxcc_epilogue", []) + [["Add", {}]]
                                         + add.attrs.get("onnxcc_epilogue", []))
        conv.outputs = add.outputs
        graph.nodes.remove(conv)
        graph.nodes[graph.nodes.index(add)] = conv
        consumers, producers = graph.consumers(), graph.producers()
    return graph
