"""A Cast of a constant is its result, computed at compile time. Mixed-precision exports
store weights in float16 or bfloat16 and Cast them to float32 before use: folded, the
graph holds float32 weights only, which the kernels read (the float16 tensor, read by
nothing else, goes)."""

import numpy as np
from onnx import TensorProto, numpy_helper

#: element types a Cast folds from: float32 holds each of their values exactly
NARROW_FLOATS = {TensorProto.FLOAT16, TensorProto.BFLOAT16}
#: element types it folds to: those float32 values exactly
WIDE_FLOATS = {TensorProto.FLOAT: np.float32, TensorProto.DOUBLE: np.float64}


def _as_float32(tensor):
    if tensor.data_type == TensorProto.BFLOAT16:  # numpy has no bfloat16: its top 16 bits
        raw = np.frombuffer(tensor.raw_data, np.uint16) if tensor.raw_data \
            else np.asarray(tensor.int32_data, np.uint32).astype(np.uint16)
        return (raw.astype(np.uint32) << 16).view(np.float32).reshape(tuple(tensor.dims))
    return numpy_helper.to_array(tensor).astype(np.float32)


def fold_constant_casts(model):
    """Replace each Cast of a float16/bfloat16 initializer to float32/float64 by an
    initializer of its output; drop the narrow initializers nothing reads any more."""
    graph = model.graph
    constants = {t.name: t for t in graph.initializer}
    keep, added = [], []
    for node in graph.node:
        cast = node.op_type == "Cast" and node.domain in ("", "ai.onnx") and node.input
        source = constants.get(node.input[0]) if cast else None
        to = next((a.i for a in node.attribute if a.name == "to"), None)
        if source is not None and source.data_type in NARROW_FLOATS and to in WIDE_FLOATS:
            added.append(numpy_helper.from_array(_as_float32(source).astype(WIDE_FLOATS[to]),
                                                 node.output[0]))
        else:
            keep.append(node)
    if not added:
        return False
    del graph.node[:]
    graph.node.extend(keep)
    graph.initializer.extend(added)
    read = {i for n in graph.node for i in n.input} | {o.name for o in graph.output}
    unread = [t for t in graph.initializer if t.data_type in NARROW_FLOATS and t.name not in read]
    for t in unread:
        graph.initializer.remove(t)
    inputs = [i for i in graph.input if i.name not in {t.name for t in unread}]
    del graph.input[:]
    graph.input.extend(inputs)
    return True
