"""Add, Sub, Mul, Div on float32 with numpy broadcasting (``broadcast``) and a fused
epilogue; the other element types run the typed ``elementwise`` kernel.
"""

from onnxcc.ops.common.broadcast import broadcast_strides, merge_dims
from onnxcc.ops.common.epilogue import (BINARY, epilogue_tag, kernel_epilogue, own_inputs,
                                        residual_roles)

from . import KernelCall, in_place
from .elementwise import lower_elementwise


def flat_spans(node, graph):
    """The kernel walks its output with one counter, the element index."""
    return [(0, len(graph.info(node.outputs[0]).shape))]


def lower_binary(node, graph):
    a, b = own_inputs(node)
    y = node.outputs[0]
    if graph.info(y).dtype != "float32":
        return lower_elementwise(node, graph)
    out_shape = graph.info(y).shape
    shape, (sa, sb) = merge_dims(out_shape, broadcast_strides(graph.info(a).shape, out_shape),
                                 broadcast_strides(graph.info(b).shape, out_shape))
    chain, operands = kernel_epilogue(node, graph, flat_spans(node, graph))
    dims = "x".join(map(str, shape))
    tag = (f"{node.op.lower()}_f32_{dims}_a{'x'.join(map(str, sa))}_b{'x'.join(map(str, sb))}"
           f"{epilogue_tag(chain)}")
    params = {"op": BINARY[node.op], "shape": shape, "a_strides": sa, "b_strides": sb,
              "out_strides": broadcast_strides(shape, shape), "epilogue": chain}
    return KernelCall("binary", tag, params, [("a", a), ("b", b)] + operands, [("y", y)])


def binary_in_place(node, graph, tensor):
    """y may be an operand read at y's own index (one not broadcast, or a fused epilogue
    operand of y's shape): each element is read right before the same element of y is
    written."""
    call = lower_binary(node, graph)
    p = call.params
    if call.template == "binary":
        roles = [r for r, strides in (("a", p["a_strides"]), ("b", p["b_strides"]))
                 if strides == p["out_strides"]]
        roles += residual_roles(call, graph)
    else:  # another element type: the elementwise kernel, inputs x0, x1
        roles = [f"x{k}" for k, strides in enumerate(p["strides"]) if strides == p["out_strides"]]
    return in_place(call, tensor, roles)


LOWERINGS = {op: lower_binary for op in BINARY}
INPLACE = {op: binary_in_place for op in BINARY}
TYPED_OPS = set(BINARY)
EPILOGUE_SPANS = {op: flat_spans for op in BINARY}
