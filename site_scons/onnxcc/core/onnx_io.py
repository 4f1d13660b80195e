"""Reading and writing ``Graph`` as ONNX files.

Each stage's graph is saved as an ``.onnx`` file a user can open in Netron, with all
constant values in a separate ``.bin`` file (ONNX external data). The ``.onnx`` file
therefore changes only when the graph structure changes: a weights-only edit leaves it
byte-identical, so SCons does not re-plan memory or regenerate kernels.
"""

import contextlib
import dataclasses
import functools
import json
import math
import os

import numpy as np
import onnx
from onnx import TensorProto, external_data_helper, helper, numpy_helper

from .errors import OnnxccError
from .files import staged_outputs
from .ir import Graph, Node, TensorInfo

#: attributes the optimizer adds (JSON-encoded, so any ONNX viewer shows them)
INTERNAL_ATTR_PREFIX = "onnxcc_"
#: model metadata key of every quantized tensor's TensorInfo.quant (JSON)
QUANT_METADATA = "onnxcc_quant"


@functools.cache
def np_dtype(elem_type):
    """The numpy dtype name of ONNX element type ``elem_type`` (asked for every tensor)."""
    return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type)).name


def _text(value, attr, where):
    """A string attribute's bytes as text (a model file's strings are untrusted bytes)."""
    try:
        return value.decode()
    except UnicodeDecodeError:
        raise OnnxccError(f"attribute '{attr.name}' is not UTF-8 text", where=where,
                          hint="the file is damaged, or was not written by an ONNX exporter") from None


def _attr_value(attr, where):
    value = helper.get_attribute_value(attr)
    if attr.name.startswith(INTERNAL_ATTR_PREFIX):
        return json.loads(value.decode())
    if isinstance(value, bytes):
        return _text(value, attr, where)
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, list):
        return [_text(v, attr, where) if isinstance(v, bytes) else v for v in value]
    if isinstance(value, (int, float)):
        return value
    raise OnnxccError(f"attribute '{attr.name}' holds a subgraph (control flow), which is not supported",
                      where=where, hint="onnxcc compiles graphs without If, Loop and Scan")


def _value_info(vi, where):
    t = vi.type.tensor_type
    if not vi.type.HasField("tensor_type"):
        raise OnnxccError(f"tensor '{vi.name}' is not a plain tensor (sequence/map/optional)",
                          where=where, hint="onnxcc compiles tensor graphs only")
    dims = []
    for d in t.shape.dim:
        if not d.HasField("dim_value"):
            return TensorInfo(vi.name, np_dtype(t.elem_type), None)
        dims.append(d.dim_value)
    shape = tuple(dims) if t.HasField("shape") else None
    return TensorInfo(vi.name, np_dtype(t.elem_type), shape)


def node_names(graph_proto):
    """A unique name per node, in order: its own, or ``<op>_<index>`` when it has none;
    a name taken by an earlier node gets a suffix (ONNX does not require unique node names,
    but tactics and the plan refer to nodes by name)."""
    taken, names = set(), []
    for k, n in enumerate(graph_proto.node):
        base = n.name or f"{n.op_type}_{k}"
        name, j = base, 1
        while name in taken:
            name, j = f"{base}_{j}", j + 1
        taken.add(name)
        names.append(name)
    return names


def graph_from_model(model, where, with_values=True):
    """``Graph`` of a shape-inferred ``ModelProto``; tensors of unknown shape have shape None."""
    g = model.graph
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    tensors, constants = {}, {}
    for init in g.initializer:
        shape = tuple(init.dims)
        tensors[init.name] = TensorInfo(init.name, np_dtype(init.data_type), shape)
        if with_values:
            try:
                constants[init.name] = numpy_helper.to_array(init).copy(order="C")
            except Exception as e:  # a broken or missing external data file
                raise OnnxccError(f"cannot read weights of '{init.name}': {e}", where=where) from None
        else:
            constants[init.name] = None
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        if vi.name not in tensors:
            tensors[vi.name] = _value_info(vi, where)
    nodes = []
    for name, n in zip(node_names(g), g.node):
        if n.domain not in ("", "ai.onnx"):
            raise OnnxccError(f"node '{name}' uses op {n.op_type} of domain '{n.domain}'",
                              where=where, hint="onnxcc supports the default ONNX domain only")
        attrs = {a.name: _attr_value(a, f"{where}: node '{name}' ({n.op_type})") for a in n.attribute}
        nodes.append(Node(name, n.op_type, list(n.input), list(n.output), attrs))
    quant = next((json.loads(p.value) for p in model.metadata_props if p.key == QUANT_METADATA), {})
    for name, q in quant.items():
        if name in tensors:
            tensors[name] = dataclasses.replace(tensors[name], quant=q)
    inputs = [i.name for i in g.input if i.name not in constants]
    return Graph(g.name or "main", inputs, [o.name for o in g.output], nodes, tensors,
                 constants, opset)


def _make_attr(key, value):
    if key.startswith(INTERNAL_ATTR_PREFIX):
        return helper.make_attribute(key, json.dumps(value, sort_keys=True))
    if isinstance(value, np.ndarray):
        return helper.make_attribute(key, numpy_helper.from_array(value))
    if isinstance(value, list) and not value:  # an empty list has no type to infer: ints
        return helper.make_attribute(key, value, attr_type=onnx.AttributeProto.INTS)
    return helper.make_attribute(key, value)


def _tensor_proto_info(info):
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(info.dtype))
    return helper.make_tensor_value_info(info.name, elem, info.shape)


def node_proto(n):
    """The ``NodeProto`` of IR node ``n``."""
    node = helper.make_node(n.op, n.inputs, n.outputs, name=n.name)
    node.attribute.extend(_make_attr(k, v) for k, v in sorted(n.attrs.items()))
    return node


def _external_initializer(name, value, location, offset):
    """The TensorProto of constant ``value`` whose bytes are at ``offset`` in the file
    ``location`` (as onnx's external data helper would write it)."""
    tensor = TensorProto(name=name, dims=value.shape,
                         data_type=helper.np_dtype_to_tensor_dtype(value.dtype),
                         data_location=TensorProto.EXTERNAL)
    for key, text in (("location", location), ("offset", offset), ("length", value.nbytes)):
        tensor.external_data.add(key=key, value=str(text))
    return tensor


def model_from_graph(graph, weights_file=None):
    """The ModelProto of ``graph``; with ``weights_file`` (a file name), its constants are
    external data laid out one after the other in that file (:func:`save_graph`)."""
    nodes = [node_proto(n) for n in graph.nodes]
    if weights_file is None:
        inits = [numpy_helper.from_array(np.array(v, order="C"), name)
                 for name, v in graph.constants.items()]
    else:
        inits, offset = [], 0
        for name, v in graph.constants.items():
            inits.append(_external_initializer(name, np.asarray(v), weights_file, offset))
            offset += np.asarray(v).nbytes
    io = set(graph.inputs) | set(graph.outputs)
    value_info = [_tensor_proto_info(t) for name, t in graph.tensors.items()
                  if name not in io and name not in graph.constants]
    g = helper.make_graph(nodes, graph.name,
                          [_tensor_proto_info(graph.tensors[i]) for i in graph.inputs],
                          [_tensor_proto_info(graph.tensors[o]) for o in graph.outputs],
                          initializer=inits, value_info=value_info)
    model = helper.make_model(g, producer_name="onnxcc",
                              opset_imports=[helper.make_opsetid("", graph.opset)])
    model.ir_version = 8
    quant = {name: t.quant for name, t in sorted(graph.tensors.items()) if t.quant}
    if quant:
        helper.set_model_props(model, {QUANT_METADATA: json.dumps(quant, sort_keys=True)})
    return model


def save_graph(graph, onnx_path, weights_path):
    """Write the structure to ``onnx_path`` and every constant to ``weights_path``, one
    after the other (ONNX external data, little-endian): straight from the arrays, never
    copied through protobuf."""
    if os.path.dirname(os.path.abspath(weights_path)) != os.path.dirname(os.path.abspath(onnx_path)):
        raise ValueError("the weights file must sit next to the graph file")
    model = model_from_graph(graph, os.path.basename(weights_path))
    with staged_outputs([onnx_path, weights_path]) as (tmp_onnx, tmp_weights):
        onnx.save_model(model, tmp_onnx)
        with open(tmp_weights, "wb") as f:
            for v in graph.constants.values():
                v = np.asarray(v)
                f.write(np.ascontiguousarray(v, v.dtype.newbyteorder("<")).data)


def load_graph(onnx_path, with_values=True):
    """The graph a stage wrote; ``with_values=False`` reads the structure only."""
    model = onnx.load(onnx_path, load_external_data=False)
    graph = graph_from_model(model, onnx_path, with_values=False)
    if with_values:
        graph.constants = _read_constants(model, graph, onnx_path)
    return graph


def _read_constants(model, graph, onnx_path):
    """{name: array} of the constants save_graph wrote, read straight into numpy."""
    folder = os.path.dirname(onnx_path)
    files, values = {}, {}
    try:
        for init in model.graph.initializer:
            info = external_data_helper.ExternalDataInfo(init)
            if info.location not in files:
                files[info.location] = open(os.path.join(folder, info.location), "rb")
            f = files[info.location]
            f.seek(info.offset or 0)
            dtype = np.dtype(graph.tensors[init.name].dtype).newbyteorder("<")
            data = bytearray(dtype.itemsize * math.prod(init.dims))  # (writable)
            if info.length != len(data) or f.readinto(data) != len(data):
                raise OnnxccError(f"cannot read the weights of '{init.name}'", where=onnx_path)
            values[init.name] = np.frombuffer(data, dtype).reshape(tuple(init.dims)).astype(
                dtype.newbyteorder("="), copy=False)
    finally:
        for f in files.values():
            f.close()
    return values


#: float initializers of at least this many bytes are weights, whose values shape
#: inference never reads (shapes come from dims; it reads the values of small integer
#: constants: Reshape's shape, Slice's starts...)
WEIGHT_BYTES = 1024
_FLOATS = {TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16}


def _set_weights_aside(model):
    """Take the bytes of ``model``'s weights (WEIGHT_BYTES) out of it; returns them, by
    initializer index, for :func:`_put_weights_back`."""
    aside = {}
    for k, t in enumerate(model.graph.initializer):
        if t.data_type in _FLOATS and len(t.raw_data) >= WEIGHT_BYTES:
            aside[k] = (t.name, t.raw_data)
            t.raw_data = b"\0"  # (a placeholder: a tensor has a value field)
    return aside


def _put_weights_back(model, aside):
    inits = model.graph.initializer
    for k, (name, data) in aside.items():
        assert inits[k].name == name and len(inits[k].raw_data) == 1  # (kept in order)
        inits[k].raw_data = data
    return model


@contextlib.contextmanager
def weights_set_aside(model):
    """``model`` without its weights' bytes for the time of the block (for an analysis
    that serializes it), then whole again."""
    aside = _set_weights_aside(model)
    try:
        yield model
    finally:
        _put_weights_back(model, aside)


def infer_model_shapes(model, where, check_type=False, hint=None):
    """The shape-inferred copy of ``model`` (whose weights it takes: use the copy). The
    weights are set aside meanwhile: shape inference serializes the whole model and
    parses its result, 45 MB each way for ResNet-18."""
    aside = _set_weights_aside(model)
    try:
        inferred = onnx.shape_inference.infer_shapes(model, check_type=check_type,
                                                     strict_mode=True, data_prop=True)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError) as e:
        raise OnnxccError(f"shape inference failed: {str(e).strip().splitlines()[0]}",
                          where=where, hint=hint) from None
    return _put_weights_back(inferred, aside)


def infer_shapes(graph, where):
    """Re-run ONNX shape inference on ``graph`` (after folding made more shapes static)."""
    inferred = infer_model_shapes(model_from_graph(graph), where)
    for name, info in graph_from_model(inferred, where, with_values=False).tensors.items():
        if name in graph.tensors and graph.tensors[name].shape is None:
            graph.tensors[name] = info
