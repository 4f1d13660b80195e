"""Fuse chains of elementwise activations into the epilogue of the kernel before them.

``Conv -> Relu`` becomes one Conv whose kernel applies Relu to each result before storing
it: one pass over memory instead of two, and one buffer less to plan.
"""

from ..ops.unary import EXPRESSIONS, unary_chain

PRODUCERS = {"Conv", "Gemm", "MatMul", "Add", "Sub", "Mul", "Div"} | set(EXPRESSIONS)


def fuse_activations(graph):
    changed = True
    while changed:
        changed = False
        consumers, producers = graph.consumers(), graph.producers()
        for act in graph.nodes:
            if act.op not in EXPRESSIONS:
                continue
            x = act.inputs[0]
            p = producers.get(x)
            if p is None or p.op not in PRODUCERS or len(consumers.get(x, [])) != 1 \
                    or x in graph.outputs or graph.info(x).dtype != "float32" \
                    or graph.info(act.outputs[0]).dtype != "float32":
                continue
            p.attrs["onnxcc_epilogue"] = p.attrs.get("onnxcc_epilogue", []) + unary_chain(act)
            p.outputs = [act.outputs[0]]
            graph.nodes.remove(act)
            changed = True
            break
    return graph
