"""Import stage: a user's .onnx file -> a validated, shape-inferred graph.

Checks what the user gave (an ONNX file, static input shapes, supported ops), fixes input
shapes the user names with ``input_shape=``, lifts Constant nodes into initializers and
runs ONNX shape inference, so that every later stage sees plain numbers.
"""

import os

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator

from . import ops
from .errors import OnnxccError
from .onnx_io import graph_from_model, save_graph
from .passes.fold_constants import compile_time_nodes
from .passes.qdq_to_qlinear import annotate_quantization
from .qoperator import qoperator_to_qdq


def parse_input_shapes(text):
    """``'a:1x3x96x96,b:1x10'`` -> ``{'a': [1, 3, 96, 96], 'b': [1, 10]}``."""
    shapes = {}
    for item in filter(None, (text or "").split(",")):
        name, sep, dims = item.rpartition(":")
        try:
            if not sep or not name:
                raise ValueError
            shapes[name] = [int(d) for d in dims.lower().split("x")]
            if any(d <= 0 for d in shapes[name]):
                raise ValueError
        except ValueError:
            raise OnnxccError(f"input_shape: '{item}' is not NAME:DxDx...",
                              hint="for example input_shape=input:1x3x96x96") from None
    return shapes


def read_model(path):
    if not os.path.isfile(path):
        raise OnnxccError("no such model file", where=path)
    try:
        return onnx.load(path)
    except (DecodeError, ValueError, RuntimeError) as e:
        raise OnnxccError(f"not an ONNX model ({type(e).__name__}: {str(e).strip() or 'parse failed'})",
                          where=path, hint="pass a .onnx file written by an ONNX exporter") from None
    except OSError as e:
        raise OnnxccError(f"cannot read the model: {e}", where=path) from None


def _fix_input_shapes(model, shapes, path):
    inits = {i.name for i in model.graph.initializer}
    inputs = {i.name: i for i in model.graph.input if i.name not in inits}
    for name in shapes:
        if name not in inputs:
            raise OnnxccError(f"input_shape names '{name}', which is not a graph input",
                              where=path, hint=f"graph inputs: {', '.join(inputs)}")
    for name, vi in inputs.items():
        dims = vi.type.tensor_type.shape.dim
        if name in shapes:
            if len(shapes[name]) != len(dims):
                raise OnnxccError(f"input_shape gives '{name}' {len(shapes[name])} dimension(s); "
                                  f"the model's input has {len(dims)}", where=path)
            for d, v in zip(dims, shapes[name]):
                d.Clear()
                d.dim_value = v
        unknown = [d.dim_param or "?" for d in dims if not d.HasField("dim_value")]
        if unknown or not vi.type.tensor_type.HasField("shape"):
            raise OnnxccError(f"input '{name}' has a symbolic or unknown dimension "
                              f"({', '.join(unknown) or 'no shape'})", where=path,
                              hint=f"fix it with input_shape={name}:1x...")


def _lift_constant_nodes(model):
    """Constant nodes become initializers, so weights live in one place."""
    keep = []
    for node in model.graph.node:
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
            value = ReferenceEvaluator(node).run(None, {})[0]
            model.graph.initializer.append(numpy_helper.from_array(np.asarray(value), node.output[0]))
        else:
            keep.append(node)
    del model.graph.node[:]
    model.graph.node.extend(keep)


def check_supported(graph, path):
    """Every node needs a kernel, unless folding computes it at compile time."""
    supported = set(ops.supported_ops())
    folded = compile_time_nodes(graph)
    for node in graph.nodes:
        if node.op not in supported and node.name not in folded:
            raise OnnxccError(f"node '{node.name}' uses op {node.op}, which onnxcc does not support",
                              where=path, hint=f"supported ops: {', '.join(ops.supported_ops())}")


def import_model(path, input_shapes=None):
    """The validated, shape-inferred ``Graph`` of the model file at ``path``."""
    model = read_model(path)
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as e:
        first = str(e).strip().splitlines()[0]
        raise OnnxccError(f"invalid ONNX model: {first}", where=path) from None
    _fix_input_shapes(model, input_shapes or {}, path)
    _lift_constant_nodes(model)
    qoperator_to_qdq(model, path)
    try:
        model = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True,
                                                  data_prop=True)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError) as e:
        first = str(e).strip().splitlines()[0]
        raise OnnxccError(f"shape inference failed: {first}", where=path) from None
    graph = graph_from_model(model, path)
    check_supported(graph, path)
    return annotate_quantization(graph)


def run(model_path, graph_path, weights_path, input_shapes=None):
    graph = import_model(model_path, input_shapes)
    save_graph(graph, graph_path, weights_path)
    return graph
