"""io_dtype=int8: the caller quantizes the inputs and dequantizes the outputs.

A quantized model's first QuantizeLinear (of each graph input) and last DequantizeLinear
(of each graph output) leave the model: the graph input becomes the integer tensor the
QuantizeLinear wrote, under the input's name, and likewise each output. A camera or
microphone pipeline that delivers int8 then hands its buffer over as it is; the header
gives each input's and output's scale and zero point (real = scale * (q - zero_point)).
"""

import json

import numpy as np
import onnx
from onnx import helper, numpy_helper

from onnxcc.core.errors import OnnxccError

#: io_dtype= values
IO_DTYPES = ("float", "int8")


def _constant(g, name):
    for init in g.initializer:
        if init.name == name:
            return numpy_helper.to_array(init)
    for n in g.node:
        if n.op_type == "Constant" and n.output[0] == name:
            return numpy_helper.to_array(n.attribute[0].t)
    return None


def _per_tensor(g, node, where):
    """(scale, zero point array) of a Q/DQ node with constant per-tensor parameters."""
    scale = _constant(g, node.input[1])
    zp = _constant(g, node.input[2]) if len(node.input) > 2 and node.input[2] else np.zeros((), np.uint8)
    if scale is None or zp is None or scale.size != 1 or zp.size != 1:
        raise OnnxccError(f"{where}'s {node.op_type} has parameters that are not one "
                          "constant scale and zero point", hint="quantize it per tensor")
    return scale, zp


def _rename(g, old, new):
    for n in g.node:
        n.input[:] = [new if i == old else i for i in n.input]
        n.output[:] = [new if o == old else o for o in n.output]


#: the metadata key of the parameters the caller applies: {tensor: [scale, zero point]}
METADATA = "io_quantization"


def io_quant(model):
    """{input or output name: (scale, zero point)} that integer_io moved to the caller."""
    for prop in model.metadata_props:
        if prop.key == METADATA:
            return {k: tuple(v) for k, v in json.loads(prop.value).items()}
    return {}


def integer_io(model, where):
    """``model`` (changed in place) with integer inputs and outputs; one line when an input
    is not quantized by QuantizeLinear nodes alone, or an output not written by a
    DequantizeLinear. The parameters are kept in the model's metadata (io_quant)."""
    g = model.graph
    moved = {}
    inits = {i.name for i in g.initializer}
    producers = {o: n for n in g.node for o in n.output}
    consumers = {}
    for n in g.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    outputs = {o.name for o in g.output}
    for k, vi in enumerate(g.input):
        if vi.name in inits:
            continue
        users = consumers.get(vi.name, [])
        if not users or any(n.op_type != "QuantizeLinear" or n.input[0] != vi.name for n in users) \
                or vi.name in outputs:
            raise OnnxccError(f"io_dtype=int8: input '{vi.name}' is not read by QuantizeLinear "
                              "nodes alone", where=where,
                              hint="give a quantized model (quantize=int8 makes one)")
        params = [_per_tensor(g, n, f"input '{vi.name}'") for n in users]
        moved[vi.name] = (float(params[0][0]), int(params[0][1]))
        if any(p[0] != params[0][0] or p[1] != params[0][1] or p[1].dtype != params[0][1].dtype
               for p in params):
            raise OnnxccError(f"io_dtype=int8: input '{vi.name}' is quantized in more than one "
                              "way", where=where)
        for n in users[1:]:
            _rename(g, n.output[0], users[0].output[0])
            g.node.remove(n)
        g.node.remove(users[0])
        _rename(g, users[0].output[0], vi.name)
        dims = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        elem = helper.np_dtype_to_tensor_dtype(params[0][1].dtype)
        g.input[k].CopyFrom(helper.make_tensor_value_info(vi.name, elem, dims))
    producers = {o: n for n in g.node for o in n.output}
    for k, vi in enumerate(g.output):
        dq = producers.get(vi.name)
        if dq is None or dq.op_type != "DequantizeLinear":
            raise OnnxccError(f"io_dtype=int8: output '{vi.name}' is not written by a "
                              "DequantizeLinear", where=where,
                              hint="give a quantized model (quantize=int8 makes one)")
        scale, zp = _per_tensor(g, dq, f"output '{vi.name}'")
        moved[vi.name] = (float(scale), int(zp))
        codes = dq.input[0]
        g.node.remove(dq)
        if codes in {i.name for i in g.input} or codes in inits:
            raise OnnxccError(f"io_dtype=int8: output '{vi.name}' is a dequantized input or "
                              "constant", where=where)
        _rename(g, codes, vi.name)
        dims = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        g.output[k].CopyFrom(helper.make_tensor_value_info(
            vi.name, helper.np_dtype_to_tensor_dtype(zp.dtype), dims))
    del g.value_info[:]  # the renamed tensors' types changed: shape inference redoes them
    used = {i for n in g.node for i in n.input}
    for init in [i for i in g.initializer if i.name not in used]:
        g.initializer.remove(init)
    onnx.helper.set_model_props(model, {**{p.key: p.value for p in model.metadata_props},
                                        METADATA: json.dumps(moved, sort_keys=True)})
    onnx.checker.check_model(model)
    return model
