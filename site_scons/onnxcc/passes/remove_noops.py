"""Remove Identity and Dropout (inference: both pass their input through), and nodes whose
outputs nobody reads."""

NOOPS = {"Identity", "Dropout"}


def remove_noops(graph):
    for node in [n for n in graph.nodes if n.op in NOOPS]:
        src, dst = node.inputs[0], node.outputs[0]
        if dst in graph.outputs:
            # the caller's output buffer must be written: keep a copy (Identity)
            node.op, node.inputs, node.outputs, node.attrs = "Identity", [src], [dst], {}
            continue
        graph.nodes.remove(node)
        graph.replace_uses(dst, src)
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
