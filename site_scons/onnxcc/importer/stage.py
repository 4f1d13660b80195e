"""Import stage: a user's .onnx file -> a validated, shape-inferred graph.

Checks what the user gave (an ONNX file, static input shapes, supported ops), fixes input
shapes the user names with ``input_shape=``, lifts Constant nodes into initializers, takes
the branch of an If whose condition is a constant (``constant_if``), casts float16 weights
at compile time (``constant_casts``) and runs ONNX shape inference, so that every later
stage sees plain numbers.

The file is untrusted: before any of it is believed, ``limits`` bounds its sizes,
``wellformed`` checks its text, versions and names, ``external_data`` reads side files only
from inside the model's folder, and after shape inference ``attributes`` validates the
structural attributes no kernel could run (docs/trust.md lists every check).
"""

import os

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from onnxcc import ops
from onnxcc.core import limits
from onnxcc.core.cgen import c_type
from onnxcc.core.collector import paused
from onnxcc.core.errors import OnnxccError
from onnxcc.core.onnx_io import graph_from_model, infer_model_shapes, save_graph
from onnxcc.passes.fold_constants import SHAPE_OPS, compile_time_nodes
from onnxcc.passes.qdq_to_qlinear import annotate_quantization

from . import attributes, ceil_pools, wellformed
from .constant_casts import fold_constant_casts
from .constant_if import fold_constant_ifs
from .external_data import load_external_data
from .functions import expand_functions
from .qoperator import mark_qoperator, qoperator_to_qdq


def parse_input_shapes(text):
    """``'a:1x3x96x96,b:1x10'`` -> ``{'a': [1, 3, 96, 96], 'b': [1, 10]}``."""
    shapes = {}
    for item in filter(None, (text or "").split(",")):
        name, sep, dims = item.rpartition(":")
        try:
            if not sep or not name:
                raise ValueError
            shapes[name] = [int(d) for d in dims.lower().split("x")]
            if any(d < 0 for d in shapes[name]):  # 0: an empty tensor
                raise ValueError
        except ValueError:
            raise OnnxccError(f"input_shape: '{item}' is not NAME:DxDx...",
                              hint="for example input_shape=input:1x3x96x96") from None
    return shapes


def read_model(path):
    """The parsed model at ``path``, checked before any part of it is believed: its text,
    versions and names, its limits, then its external data (read only from inside its
    folder) and every initializer's data against its dims."""
    if not os.path.isfile(path):
        raise OnnxccError("no such model file", where=path)
    try:
        model = onnx.load(path, load_external_data=False)
    except (DecodeError, ValueError, RuntimeError) as e:
        first = (str(e).strip() or "parse failed").splitlines()[0]
        raise OnnxccError(f"not an ONNX model ({type(e).__name__}: {first})",
                          where=path, hint="pass a .onnx file written by an ONNX exporter") from None
    except OSError as e:
        raise OnnxccError(f"cannot read the model: {e}", where=path) from None
    limits.check_model(model, path)
    wellformed.check(model, path)
    load_external_data(model, path)
    for tensor in limits.model_tensors(model):
        limits.check_initializer(tensor, path)
    if model.graph.sparse_initializer:
        raise OnnxccError("the model has sparse initializers, which onnxcc does not read",
                          where=path, hint="store the weights as dense initializers")
    return model


def _fix_input_shapes(model, shapes, path):
    inits = {i.name for i in model.graph.initializer}
    inputs = {i.name: i for i in model.graph.input if i.name not in inits}
    for name in shapes:
        if name not in inputs:
            raise OnnxccError(f"input_shape names '{name}', which is not a graph input",
                              where=path, hint=f"graph inputs: {', '.join(inputs)}")
    for name, vi in inputs.items():
        if not vi.type.HasField("tensor_type"):
            raise OnnxccError(f"input '{name}' is not a plain tensor (sequence/map/optional)",
                              where=path, hint="onnxcc compiles tensor graphs only")
        dims = vi.type.tensor_type.shape.dim
        if name in shapes:
            if len(shapes[name]) != len(dims):
                raise OnnxccError(f"input_shape gives '{name}' {len(shapes[name])} dimension(s); "
                                  f"the model's input has {len(dims)}", where=path)
            for k, (d, v) in enumerate(zip(dims, shapes[name])):
                if d.HasField("dim_value") and d.dim_value != v:
                    raise OnnxccError(f"input_shape gives '{name}' dimension {k} the size {v}; "
                                      f"the model fixes it at {d.dim_value}", where=path,
                                      hint="input_shape= fixes symbolic dimensions only: give "
                                           f"the model's size or leave '{name}' out")
                d.Clear()
                d.dim_value = v
        unknown = [d.dim_param or "?" for d in dims if not d.HasField("dim_value")]
        if unknown or not vi.type.tensor_type.HasField("shape"):
            raise OnnxccError(f"input '{name}' has a symbolic or unknown dimension "
                              f"({', '.join(unknown) or 'no shape'})", where=path,
                              hint=f"fix it with input_shape={name}:1x...")


def _constant_value(node, where):
    try:
        return np.asarray(ReferenceEvaluator(node).run(None, {})[0])
    except Exception as e:  # the reference evaluator raises many types
        raise OnnxccError(f"Constant node '{node.name}' has no usable value: "
                          f"{' '.join(str(e).split())[:200]}", where=where,
                          hint="re-export the model") from None


def _lift_constant_nodes(model, where):
    """Constant nodes become initializers, so weights live in one place."""
    keep = []
    for node in model.graph.node:
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
            value = _constant_value(node, where)
            model.graph.initializer.append(numpy_helper.from_array(value, node.output[0]))
            if model.ir_version < 4:  # before IR 4 every initializer is also a graph input
                model.graph.input.append(helper.make_tensor_value_info(
                    node.output[0], helper.np_dtype_to_tensor_dtype(value.dtype), value.shape))
        else:
            keep.append(node)
    del model.graph.node[:]
    model.graph.node.extend(keep)


#: ops whose output shape depends on their input values: compiled only when folded
VALUE_DEPENDENT = {"NonZero", "Unique", "NonMaxSuppression", "Compress"}


def check_supported(graph, path):
    """Every node needs a kernel, unless folding computes it at compile time (a shape op
    folds once its input's shape is static: the optimizer says so when it never is)."""
    supported = set(ops.supported_ops()) | SHAPE_OPS
    folded = compile_time_nodes(graph)
    for node in graph.nodes:
        if node.op in VALUE_DEPENDENT and node.name not in folded:
            raise OnnxccError(f"node '{node.name}' (op {node.op}): its output shape depends on the "
                              "values of its inputs", where=path,
                              hint="onnxcc compiles static shapes: with constant inputs it is "
                                   "computed at compile time")
        if node.op not in supported and node.name not in folded:
            raise OnnxccError(f"node '{node.name}' uses op {node.op}, which onnxcc does not support",
                              where=path, hint=f"supported ops: {', '.join(ops.supported_ops())}")


def check_element_types(graph, path):
    """Every tensor must have an element type C can hold (no float16, strings, ...)."""
    for info in graph.tensors.values():
        try:
            c_type(info.dtype)
        except OnnxccError as e:
            raise OnnxccError(f"tensor '{info.name}': {e.message}", where=path, hint=e.hint) from None


def _infer_shapes(model, path):
    """The shape-inferred copy of ``model`` (whose weights it takes: use the copy), its
    ceil_mode pools first counted as onnxruntime counts them (ceil_pools)."""
    rewritten = ceil_pools.count_as_onnxruntime(model, path)
    return infer_model_shapes(model, path, check_type=True,
                              hint=ceil_pools.hint(rewritten) if rewritten else None)


def import_model(path, input_shapes=None):
    """The validated, shape-inferred ``Graph`` of the model file at ``path``."""
    model = read_model(path)
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as e:
        first = str(e).strip().splitlines()[0]
        raise OnnxccError(f"invalid ONNX model: {first}", where=path) from None
    _fix_input_shapes(model, input_shapes or {}, path)
    _lift_constant_nodes(model, path)
    while fold_constant_ifs(model, path):
        _lift_constant_nodes(model, path)  # the branches' Constant nodes: a nested If's condition
    fold_constant_casts(model)
    from_qoperator = qoperator_to_qdq(model, path)
    wellformed.check_required_inputs(model, path)  # again: QOperator nodes became QDQ ones
    model = _infer_shapes(model, path)
    expanded = True
    while expanded:  # a function's body may use other functions
        model, expanded = expand_functions(model, keep=set(ops.supported_ops()))
        if expanded:
            _lift_constant_nodes(model, path)
            model = _infer_shapes(model, path)
    graph = graph_from_model(model, path)
    check_element_types(graph, path)
    limits.check_graph(graph, path)
    attributes.validate(graph, path)
    mark_qoperator(graph, from_qoperator)
    check_supported(graph, path)
    return annotate_quantization(graph)


@paused()
def run(model_path, graph_path, weights_path, input_shapes=None):
    graph = import_model(model_path, input_shapes)
    save_graph(graph, graph_path, weights_path)
    return graph
