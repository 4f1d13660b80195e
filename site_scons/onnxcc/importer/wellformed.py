"""Checks of a parsed model that the ONNX checker does not make, or makes with a traceback.

Run first, on the untrusted protobuf: every text field must be UTF-8 (protobuf hands back
``bytes`` for a string field that is not, and onnx's checker then dies with a
UnicodeDecodeError), the IR version and the default-domain opset must be ones onnx knows,
and graph inputs, outputs and initializers need names.
"""

import onnx
from onnx import defs

from onnxcc.core.errors import OnnxccError
from onnxcc.core.onnx_io import INTERNAL_ATTR_PREFIX

#: the oldest IR version onnxcc reads (IR 3 is ONNX 1.0's, with opset imports)
MIN_IR_VERSION = 3


def _not_utf8(message, path):
    """The path of the first string field of ``message`` that is not UTF-8, else None."""
    for field, value in message.ListFields():
        items = value if field.is_repeated else [value]
        if field.type == field.TYPE_MESSAGE:
            for k, item in enumerate(items):
                found = _not_utf8(item, f"{path}.{field.name}[{k}]")
                if found:
                    return found
        elif field.type == field.TYPE_STRING and any(isinstance(v, bytes) for v in items):
            return f"{path}.{field.name}"
    return None


def check_text(model, where):
    bad = _not_utf8(model, "model")
    if bad:
        raise OnnxccError(f"a name or text field is not valid UTF-8 ({bad})", where=where,
                          hint="the file is damaged, or was not written by an ONNX exporter")


def check_versions(model, where):
    newest_ir = onnx.IR_VERSION
    if not MIN_IR_VERSION <= model.ir_version <= newest_ir:
        raise OnnxccError(f"IR version {model.ir_version} is not one onnxcc reads "
                          f"({MIN_IR_VERSION} to {newest_ir})", where=where,
                          hint="re-export the model with a current ONNX exporter")
    default = [o for o in model.opset_import if o.domain in ("", "ai.onnx")]
    newest = defs.onnx_opset_version()
    if not default:
        if any(n.domain in ("", "ai.onnx") for n in model.graph.node):
            raise OnnxccError("the model imports no opset of the default ONNX domain, which "
                              "its nodes use", where=where,
                              hint="re-export the model; its opset_import is missing")
        return  # nodes of other domains only: the supported-op check names them
    if len(default) > 1:
        raise OnnxccError(f"the model imports the default ONNX domain {len(default)} times "
                          f"(opsets {', '.join(str(o.version) for o in default)})", where=where)
    if not 1 <= default[0].version <= newest:
        raise OnnxccError(f"opset {default[0].version} of the default ONNX domain does not "
                          f"exist (1 to {newest})", where=where, hint="re-export the model")


def check_names(model, where):
    g = model.graph
    for kind, items in (("graph input", g.input), ("graph output", g.output),
                        ("initializer", g.initializer)):
        if any(not item.name for item in items):
            raise OnnxccError(f"a {kind} has no name", where=where, hint="re-export the model")
    outputs = [o.name for o in g.output]
    twice = sorted({o for o in outputs if outputs.count(o) > 1})
    if twice:
        raise OnnxccError(f"graph output '{twice[0]}' is listed twice", where=where,
                          hint="name each graph output once")


def _schema(node, opset):
    try:
        return defs.get_schema(node.op_type, opset, node.domain)
    except defs.SchemaError:
        return None  # an unknown op: the supported-op check names it


def check_required_inputs(model, where):
    """A required input of a node may not be left out ('' marks an omitted optional one)."""
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    for k, node in enumerate(model.graph.node):
        if all(node.input):  # (nothing left out: no need for the schema)
            continue
        schema = _schema(node, opset) if opset and node.domain in ("", "ai.onnx") else None
        if schema is None:
            continue
        for i, name in enumerate(node.input):
            formal = schema.inputs[min(i, len(schema.inputs) - 1)] if schema.inputs else None
            if not name and formal is not None and formal.option != formal.option.Optional:
                raise OnnxccError(f"node '{node.name or k}' (op {node.op_type}): required input "
                                  f"{i} ({formal.name}) is empty", where=where,
                                  hint="re-export the model")


def check_reserved_names(model, where):
    """``onnxcc_*`` attributes and metadata are the compiler's own notes between stages
    (JSON it trusts): a model file may not bring its own."""
    for prop in model.metadata_props:
        if prop.key.startswith(INTERNAL_ATTR_PREFIX):
            raise OnnxccError(f"metadata key '{prop.key}': names starting with "
                              f"{INTERNAL_ATTR_PREFIX} are reserved for onnxcc", where=where,
                              hint="rename or remove the metadata entry")
    for k, node in enumerate(model.graph.node):
        for attr in node.attribute:
            if attr.name.startswith(INTERNAL_ATTR_PREFIX):
                raise OnnxccError(f"node '{node.name or k}' (op {node.op_type}) has attribute "
                                  f"'{attr.name}': names starting with {INTERNAL_ATTR_PREFIX} "
                                  "are reserved for onnxcc", where=where,
                                  hint="rename or remove the attribute")


def check(model, where):
    """All the checks above, the cheap text walk first."""
    check_versions(model, where)
    check_text(model, where)
    check_names(model, where)
    check_reserved_names(model, where)
    check_required_inputs(model, where)
