"""Add, Sub, Mul, Div with numpy broadcasting.

The broadcast is resolved at compile time into per-operand element strides over the
output's dimensions (0 where an operand repeats), with contiguous dimensions merged, so
the common cases (equal shapes, a scalar, a per-channel vector) become one or two loops.
"""

from . import KernelCall, in_place
from .epilogue import epilogue_tag, kernel_epilogue, own_inputs, residual_roles

C_OPERATORS = {"Add": "+", "Sub": "-", "Mul": "*", "Div": "/"}


def broadcast_strides(shape, out_shape):
    """Element strides of a row-major tensor of ``shape`` read over ``out_shape``."""
    shape = (1,) * (len(out_shape) - len(shape)) + tuple(shape)
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(0 if d == 1 else step)
        step *= d
    return list(reversed(strides))


def merge_dims(out_shape, *stride_lists):
    """Drop size-1 dimensions and merge neighbours that every operand walks contiguously."""
    dims = [(d, [s[i] for s in stride_lists]) for i, d in enumerate(out_shape) if d != 1]
    merged = []
    for d, strides in dims:
        if merged:
            pd, pstrides = merged[-1]
            if all(ps == s * d for ps, s in zip(pstrides, strides)):
                merged[-1] = (pd * d, strides)
                continue
        merged.append((d, strides))
    if not merged:
        merged = [(1, [0] * len(stride_lists))]
    shape = [d for d, _ in merged]
    return shape, [[s[k] for _, s in merged] for k in range(len(stride_lists))]


def flat_spans(node, graph):
    """The kernel walks its output with one counter, the element index."""
    return [(0, len(graph.info(node.outputs[0]).shape))]


def lower_binary(node, graph):
    a, b = own_inputs(node)
    y = node.outputs[0]
    if graph.info(y).dtype != "float32":
        from .elementwise import lower_elementwise  # any element type, no epilogue
        return lower_elementwise(node, graph)
    out_shape = graph.info(y).shape
    shape, (sa, sb) = merge_dims(out_shape, broadcast_strides(graph.info(a).shape, out_shape),
                                 broadcast_strides(graph.info(b).shape, out_shape))
    chain, operands = kernel_epilogue(node, graph, flat_spans(node, graph))
    dims = "x".join(map(str, shape))
    tag = (f"{node.op.lower()}_f32_{dims}_a{'x'.join(map(str, sa))}_b{'x'.join(map(str, sb))}"
           f"{epilogue_tag(chain)}")
    params = {"op": C_OPERATORS[node.op], "shape": shape, "a_strides": sa, "b_strides": sb,
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


LOWERINGS = {op: lower_binary for op in C_OPERATORS}
INPLACE = {op: binary_in_place for op in C_OPERATORS}
TYPED_OPS = set(C_OPERATORS)
EPILOGUE_SPANS = {op: flat_spans for op in C_OPERATORS}
