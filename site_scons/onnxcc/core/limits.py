"""Limits on what a model may ask for, checked before anything large is allocated.

A model file is untrusted: a few bytes can declare a tensor of 2**40 elements, a million
nodes or data shorter than its dims. These checks run on the parsed protobuf and on the
shape-inferred graph, with Python integers (no overflow), so an absurd model ends in one
clear line with the numbers instead of an out-of-memory, a hang or a wrapped byte count in C.
The generated C API counts bytes in 32 bits on 32-bit targets, hence the tensor limit.
"""

import numpy as np
from onnx import TensorProto, helper

from .errors import OnnxccError

#: nodes in one graph (MCU-class models have hundreds; transformers a few thousand)
MAX_NODES = 100_000
#: dimensions of one tensor
MAX_RANK = 16
#: bytes of one tensor (and elements of one dimension): what a signed 32-bit count holds
MAX_TENSOR_BYTES = 2 ** 31 - 1
#: bytes a compile-time evaluation (constant folding) may produce for one node
MAX_FOLD_BYTES = 256 << 20


def element_type_name(code):
    """The TensorProto.DataType name of ``code``; None when no such type exists."""
    try:
        return TensorProto.DataType.Name(code)
    except ValueError:
        return None


def itemsize(code):
    """Bytes of one element of ONNX element type ``code`` (1 for sub-byte types)."""
    try:
        return max(np.dtype(helper.tensor_dtype_to_np_dtype(code)).itemsize, 1)
    except (KeyError, TypeError, ValueError):
        return 1


def check_shape(what, dims, code, where):
    """``dims`` of a tensor of element type ``code``: a sane rank, no negative dim, and at
    most MAX_TENSOR_BYTES bytes."""
    dims = list(dims)
    if len(dims) > MAX_RANK:
        raise OnnxccError(f"{what} has {len(dims)} dimensions, more than the limit of {MAX_RANK}",
                          where=where)
    if any(d < 0 for d in dims):
        raise OnnxccError(f"{what} has a negative dimension {dims}", where=where,
                          hint="re-export the model")
    if any(d > MAX_TENSOR_BYTES for d in dims):  # (an empty tensor still counts its dims)
        raise OnnxccError(f"{what} of shape {dims} has a dimension of more than the limit of "
                          f"{MAX_TENSOR_BYTES}", where=where, hint="re-export the model")
    count = 1
    for d in dims:
        count *= d
    if count * itemsize(code) > MAX_TENSOR_BYTES:
        raise OnnxccError(f"{what} of shape {dims} would take {count * itemsize(code)} bytes, "
                          f"more than the limit of {MAX_TENSOR_BYTES} (2 GiB)", where=where,
                          hint="onnxcc compiles models that fit a microcontroller or a small CPU")
    return count


#: the TensorProto field that holds the values of each element type when not in raw_data
#: (count per element: complex numbers take two)
_TYPED_FIELDS = {
    TensorProto.FLOAT: ("float_data", 1), TensorProto.DOUBLE: ("double_data", 1),
    TensorProto.INT64: ("int64_data", 1), TensorProto.UINT32: ("uint64_data", 1),
    TensorProto.UINT64: ("uint64_data", 1), TensorProto.COMPLEX64: ("float_data", 2),
    TensorProto.COMPLEX128: ("double_data", 2), TensorProto.STRING: ("string_data", 1),
    **{code: ("int32_data", 1) for code in (
        TensorProto.INT32, TensorProto.INT16, TensorProto.INT8, TensorProto.UINT16,
        TensorProto.UINT8, TensorProto.BOOL, TensorProto.FLOAT16, TensorProto.BFLOAT16)},
}


def model_tensors(model):
    """Every constant tensor of ``model``'s graph: initializers and node attributes'."""
    found = list(model.graph.initializer)
    for node in model.graph.node:
        for attr in node.attribute:
            if attr.HasField("t"):
                found.append(attr.t)
            found.extend(attr.tensors)
    return found


def check_initializer(tensor, where):
    """A constant tensor: a known element type, a sane shape, and as many values as its
    dims say (after its external data was read)."""
    what = f"initializer '{tensor.name}'" if tensor.name else "a tensor attribute of a node"
    if element_type_name(tensor.data_type) in (None, "UNDEFINED"):
        raise OnnxccError(f"{what} has element type code {tensor.data_type}, which ONNX does not "
                          "define", where=where, hint="re-export the model")
    count = check_shape(what, tensor.dims, tensor.data_type, where)
    field, per = _TYPED_FIELDS.get(tensor.data_type, (None, 1))
    if tensor.HasField("raw_data"):
        have, want, unit = len(tensor.raw_data), count * itemsize(tensor.data_type), "bytes"
        if field is None:  # sub-byte and 8-bit float types: packed, checked by onnx
            return
    elif field is not None:
        have, want, unit = len(getattr(tensor, field)), count * per, "values"
    else:
        return
    if have != want:
        raise OnnxccError(f"{what} of shape {list(tensor.dims)} holds {have} {unit} of data "
                          f"where its dims need {want}", where=where, hint="re-export the model")


def check_model(model, where):
    """Limits on the parsed model, before the ONNX checker or shape inference see it."""
    g = model.graph
    if len(g.node) > MAX_NODES:
        raise OnnxccError(f"the graph has {len(g.node)} nodes, more than the limit of {MAX_NODES}",
                          where=where)
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        t = vi.type.tensor_type
        if vi.type.HasField("tensor_type"):
            if element_type_name(t.elem_type) in (None, "UNDEFINED"):
                raise OnnxccError(f"tensor '{vi.name}' has element type code {t.elem_type}, which "
                                  "ONNX does not define", where=where, hint="re-export the model")
            dims = [d.dim_value for d in t.shape.dim if d.HasField("dim_value")]
            check_shape(f"tensor '{vi.name}'", dims, t.elem_type, where)


def check_graph(graph, where):
    """Limits on every tensor of the shape-inferred graph (activations included)."""
    for info in graph.tensors.values():
        if info.shape is not None:
            code = helper.np_dtype_to_tensor_dtype(np.dtype(info.dtype))
            check_shape(f"tensor '{info.name}'", info.shape, code, where)
