"""Constant inputs that are really parameters become attributes.

Kernels are specialized on parameters, and the planner and the code generator read the
graph without its weights: so a parameter such as Clip's min and max (inputs since
opset 11) must live in the graph structure, not in the weights file.
"""

from ..errors import OnnxccError


def params_to_attrs(graph, where="graph"):
    for node in graph.nodes:
        if node.op == "Clip" and len(node.inputs) > 1:
            for key, name in zip(("min", "max"), node.inputs[1:]):
                if not name:
                    continue
                if not graph.is_constant(name):
                    raise OnnxccError(f"node '{node.name}' (op Clip): a computed {key} bound is "
                                      "not supported", where=where, hint="make it a constant")
                node.attrs[key] = float(graph.constants[name].reshape(-1)[0])
            node.inputs = node.inputs[:1]
    graph.drop_unused_constants()
    return graph
