"""Remove Identity and inference-time Dropout (both pass their input through), and nodes
whose outputs nobody reads."""

import numpy as np

NOOPS = {"Identity", "Dropout"}


def _passes_through(graph, node):
    """Identity, or a Dropout not in training mode (training_mode absent or constant false)."""
    if node.op == "Identity":
        return True
    mode = node.inputs[2] if len(node.inputs) > 2 else ""
    return not mode or (graph.is_constant(mode) and not graph.constants[mode].any())


def remove_noops(graph):
    renamed, removed = {}, set()  # a removed no-op's output -> the tensor it passed through

    def source(t):
        while t in renamed:
            t = renamed[t]
        return t

    for node in [n for n in graph.nodes if n.op in NOOPS and _passes_through(graph, n)]:
        src, dst = source(node.inputs[0]), node.outputs[0]
        if node.op == "Dropout" and len(node.outputs) > 1 and node.outputs[1]:
            mask = node.outputs[1]  # nothing is dropped: the mask is all true
            graph.add_constant(mask, np.ones(graph.info(mask).shape, bool))
        if dst in graph.outputs:
            # the caller's output buffer must be written: keep a copy (Identity)
            node.op, node.inputs, node.outputs, node.attrs = "Identity", [src], [dst], {}
            continue
        removed.add(id(node))
        renamed[dst] = src
    if renamed:  # every reader renamed in one walk over the graph
        graph.nodes = [n for n in graph.nodes if id(n) not in removed]
        for node in graph.nodes:
            node.inputs = [source(i) if i else i for i in node.inputs]
        graph.outputs = [source(o) for o in graph.outputs]
    prune_unused(graph)
    return graph


def prune_unused(graph):
    """Drop nodes none of whose outputs is read (walking back from the graph outputs)."""
    needed = set(graph.outputs)
    keep = []
    for node in reversed(graph.nodes):
        if any(o in needed for o in node.outputs):
            keep.append(node)
            needed.update(i for i in node.inputs if i)
    graph.nodes = list(reversed(keep))
    graph.drop_unused_constants()
    return graph
