"""QuantizeLinear before a reshape: ``op -> Reshape -> QuantizeLinear`` becomes
``op -> QuantizeLinear -> Reshape``, so that qdq_to_qlinear finds the op's group."""

import dataclasses

import numpy as np

from onnxcc.core.ir import Names


def quantize_before_reshape(graph):
    """``op -> Reshape -> QuantizeLinear`` becomes ``op -> QuantizeLinear -> Reshape``
    (exact: a per-tensor QuantizeLinear works element by element, a Reshape only
    renames them), so that the op's group is found: the dynamo exporter's ``mean`` then
    ``flatten`` is ReduceMean -> Reshape, quantized after the Reshape."""
    if not any(n.op == "QuantizeLinear" for n in graph.nodes):
        return graph
    consumers, producers = graph.consumers(), graph.producers()
    names = Names(graph)
    for q in [n for n in graph.nodes if n.op == "QuantizeLinear"]:
        reshape = producers.get(q.inputs[0])
        if reshape is None or reshape.op not in ("Reshape", "Flatten", "Squeeze", "Unsqueeze"):
            continue
        source = reshape.inputs[0]
        op = producers.get(source)
        if (op is None or op.op in ("QuantizeLinear", "DequantizeLinear")
                or graph.sole_reader(source, consumers) is not reshape
                or graph.sole_reader(reshape.outputs[0], consumers) is not q
                or any(not graph.is_constant(i) for i in q.inputs[1:] if i)
                or np.asarray(graph.constants[q.inputs[1]]).size != 1):
            continue
        codes = names.unique(f"{source}_quantized")
        graph.tensors[codes] = dataclasses.replace(graph.info(source), name=codes,
                                                   dtype=graph.info(q.outputs[0]).dtype)
        out, dropped = q.outputs[0], reshape.outputs[0]
        q.inputs[0], q.outputs[0] = source, codes
        reshape.inputs[0], reshape.outputs[0] = codes, out
        graph.tensors.pop(dropped, None)
        graph.nodes.remove(q)
        graph.nodes.insert(graph.nodes.index(reshape), q)
    return graph
