"""Ops ONNX defines as a function of other ops are compiled as that function.

Many ops (SoftmaxCrossEntropyLoss, Attention, CenterCropPad, the window functions, ...)
carry their definition in the operator schema as a graph of simpler ops. A node of such
an op that onnxcc has no kernel for is replaced by the schema's body for the model's
opset (ONNX's inliner renames the inner tensors and resolves attribute references), until
no such node is left.
"""

import onnx
import onnx.inliner
from onnx import FunctionProto, helper

DOMAIN = "onnxcc.expanded"
CONTROL_FLOW = {"If", "Loop", "Scan"}


def _schema(node, opset):
    try:
        return onnx.defs.get_schema(node.op_type, opset, domain=node.domain)
    except onnx.defs.SchemaError:
        return None


def _body(node, schema, opset, types):
    """The schema's FunctionProto of ``node`` at ``opset``, or None."""
    versions = [v for v in schema.function_opset_versions if v <= opset]
    if versions:
        text = schema.get_function_with_opset_version(max(versions))
    else:
        versions = [v for v in schema.context_dependent_function_opset_versions if v <= opset]
        inputs = [types.get(name) for name in node.input]
        if not versions or any(name and t is None for name, t in zip(node.input, inputs)):
            return None
        text = schema.get_context_dependent_function_with_opset_version(
            max(versions), node.SerializeToString(),
            [(t or onnx.TypeProto()).SerializeToString() for t in inputs])
    body = FunctionProto()
    body.ParseFromString(text)
    return body


def expand_functions(model, keep):
    """``model`` with every node whose op is not in ``keep`` and has a function body
    replaced by it; ``model`` must be shape-inferred (context-dependent bodies depend on
    the input types). Returns (model, number of nodes expanded)."""
    if all(node.domain not in ("", "ai.onnx") or node.op_type in keep for node in model.graph.node):
        return model, 0  # (no node to look at: no copy of the model, no table of types)
    original, model = model, onnx.ModelProto()
    model.CopyFrom(original)
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    types = {vi.name: vi.type for vi in list(model.graph.input) + list(model.graph.value_info)
             + list(model.graph.output)}
    types.update({i.name: helper.make_tensor_type_proto(i.data_type, i.dims)
                  for i in model.graph.initializer})
    expanded = 0
    for k, node in enumerate(model.graph.node):
        if node.domain not in ("", "ai.onnx") or node.op_type in keep:
            continue
        schema = _schema(node, opset)
        body = schema and _body(node, schema, opset, types)
        if body is None or any(n.op_type in CONTROL_FLOW for n in body.node):
            continue  # (onnxcc compiles no control flow: the op's own message is clearer)
        set_attrs = {a.name for a in node.attribute}
        node.attribute.extend(a.default_value for name, a in schema.attributes.items()
                              if name not in set_attrs and a.default_value.name)
        body.domain, body.name = DOMAIN, f"{node.op_type}_{k}"
        node.domain, node.op_type = DOMAIN, body.name
        model.functions.append(body)
        expanded += 1
    if not expanded:
        return original, 0
    model.opset_import.append(helper.make_opsetid(DOMAIN, 1))
    try:  # bodies written for an older opset are converted to the model's
        model = onnx.inliner.inline_local_functions(model, convert_version=True)
    except Exception:  # noqa: BLE001 (onnx raises several types): keep the ops as they are
        return original, 0
    del model.opset_import[[o.domain for o in model.opset_import].index(DOMAIN)]
    return model, expanded
