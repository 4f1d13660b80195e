"""An If whose condition is a constant (an initializer, or a Constant node already lifted
into one) is its taken branch: the branch's nodes and initializers move into the graph,
their names prefixed with the If's so that none meets a name of the graph's, and the
branch's outputs reach the If's through Identity nodes (which the optimizer removes).
An If whose condition is computed at run time stays, and is refused later."""

import numpy as np
from onnx import helper, numpy_helper

from onnxcc.core.errors import OnnxccError


def _condition(node, constants, where):
    """The If's condition as a Python bool, or None where it is not a constant."""
    tensor = constants.get(node.input[0]) if node.input else None
    if tensor is None:
        return None
    value = numpy_helper.to_array(tensor)
    if value.size != 1:
        raise OnnxccError(f"node '{node.name}' (If): its condition has {value.size} elements, "
                          "not one", where=where, hint="re-export the model")
    return bool(np.asarray(value).reshape(-1)[0])


def _rename_inputs(nodes, renamed):
    """``nodes``' inputs renamed, and those of the subgraphs they hold (a nested If's
    branches read the enclosing branch's values; ONNX lets no subgraph redefine them)."""
    for n in nodes:
        n.input[:] = [renamed.get(i, i) for i in n.input]
        for a in n.attribute:
            for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                _rename_inputs(g.node, renamed)


def _inline(node, branch, prefix):
    """The nodes that replace ``node`` (an If) by ``branch``, and its initializers; every
    name the branch defines is prefixed, names from outside it are kept."""
    defined = {t.name for t in branch.initializer}
    defined |= {o for n in branch.node for o in n.output if o}
    renamed = {name: f"{prefix}/{name}" for name in defined}
    nodes = []
    for n in branch.node:
        copy = type(n)()
        copy.CopyFrom(n)
        copy.name = f"{prefix}/{n.name}" if n.name else ""
        copy.output[:] = [renamed.get(o, o) for o in n.output]
        nodes.append(copy)
    _rename_inputs(nodes, renamed)
    initializers = []
    for t in branch.initializer:
        copy = type(t)()
        copy.CopyFrom(t)
        copy.name = renamed[t.name]
        initializers.append(copy)
    for out, result in zip(branch.output, node.output):
        if result:
            nodes.append(helper.make_node("Identity", [renamed.get(out.name, out.name)], [result],
                                          name=f"{prefix}/output/{result}"))
    return nodes, initializers


def fold_constant_ifs(model, where):
    """Replace every If of ``model``'s graph whose condition is a constant by its taken
    branch (again, for an If the branch brought); True if any was."""
    folded = False
    while True:
        constants = {t.name: t for t in model.graph.initializer}
        for k, node in enumerate(model.graph.node):
            if node.op_type != "If" or node.domain not in ("", "ai.onnx"):
                continue
            taken = _condition(node, constants, where)
            if taken is None:
                continue
            attrs = {a.name: a for a in node.attribute}
            branch = attrs["then_branch" if taken else "else_branch"].g
            nodes, initializers = _inline(node, branch, node.name or f"If_{k}")
            del model.graph.node[k]
            for j, n in enumerate(nodes):
                model.graph.node.insert(k + j, n)
            model.graph.initializer.extend(initializers)
            folded = True
            break
        else:
            return folded
