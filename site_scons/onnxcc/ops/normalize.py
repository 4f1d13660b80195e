"""Softmax and LayerNormalization: reductions over trailing axes."""

from . import KernelCall, in_place, unsupported


def _split(shape, axis):
    axis %= len(shape)
    outer = 1
    for d in shape[:axis]:
        outer *= d
    inner = 1
    for d in shape[axis:]:
        inner *= d
    return axis, outer, inner


def lower_softmax(node, graph):
    x, y = node.inputs[0], node.outputs[0]
    shape = graph.info(x).shape
    if graph.opset < 13:  # the input is coerced to 2-D at axis: reduce over all trailing axes
        _, outer, n = _split(shape, node.attrs.get("axis", 1))
        inner = 1
    else:
        axis = node.attrs.get("axis", -1) % len(shape)
        _, outer, rest = _split(shape, axis)
        n = shape[axis]
        inner = rest // n
    p = {"outer": outer, "n": n, "inner": inner}
    return KernelCall("softmax", f"f32_{outer}x{n}x{inner}", p, [("x", x)], [("y", y)])


def lower_layernorm(node, graph):
    x, scale = node.inputs[0], node.inputs[1]
    bias = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
    if any(node.outputs[1:]):
        raise unsupported(node, "the Mean / InvStdDev outputs (training only)")
    _, outer, n = _split(graph.info(x).shape, node.attrs.get("axis", -1))
    p = {"outer": outer, "n": n, "epsilon": float(node.attrs.get("epsilon", 1e-5)),
         "bias": bias is not None}
    inputs = [("x", x), ("scale", scale)] + ([("bias", bias)] if bias else [])
    tag = f"f32_{outer}x{n}" + ("_bias" if bias else "")
    return KernelCall("layernorm", tag, p, inputs, [("y", node.outputs[0])])


def softmax_in_place(node, graph, tensor):
    """Each element of y is written after the same element of x was last read."""
    return in_place(lower_softmax(node, graph), tensor, ("x",))


def layernorm_in_place(node, graph, tensor):
    """The statistics of a row are taken before any of it is written; then each y[i]
    right after x[i] is read."""
    return in_place(lower_layernorm(node, graph), tensor, ("x",))


LOWERINGS = {"Softmax": lower_softmax, "LayerNormalization": lower_layernorm}
INPLACE = {"Softmax": softmax_in_place, "LayerNormalization": layernorm_in_place}
