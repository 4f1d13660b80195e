"""Softmax, LogSoftmax, Hardmax and the normalizations: LayerNormalization,
RMSNormalization, InstanceNormalization, GroupNormalization, BatchNormalization (with
statistics known only at run time), LpNormalization and LRN.

Softmax and LogSoftmax have two tactics: reference (libm's exp, one element at a time)
and, on float32 with SIMD, vector (vmath's exp and log in vectors along the axis when it
is the last, else across the axes after it). So has LayerNormalization: reference (each
sum one float) and, with SIMD, vector (the sums in vectors of partial sums).
"""

from onnxcc.ops.common.tiling import LIBM_COST, VMATH_COST

from . import KernelCall, Tactic, in_place, unsupported
from .unary import dtype_tag


def _split(shape, axis):
    axis %= len(shape)
    outer = 1
    for d in shape[:axis]:
        outer *= d
    inner = 1
    for d in shape[axis:]:
        inner *= d
    return axis, outer, inner


def softmax_span(node, graph):
    """(outer, n, inner) of a softmax's input (float or QLinearSoftmax): ``outer`` runs of
    ``n`` normalized elements ``inner`` apart."""
    shape = graph.info(node.inputs[0]).shape
    if graph.opset < 13:  # the input is coerced to 2-D at axis: reduce over all trailing axes
        _, outer, n = _split(shape, node.attrs.get("axis", 1))
        return outer, n, 1
    axis = node.attrs.get("axis", -1) % len(shape)
    _, outer, rest = _split(shape, axis)
    return outer, shape[axis], rest // shape[axis]


def lower_softmax(node, graph):
    x, y = node.inputs[0], node.outputs[0]
    outer, n, inner = softmax_span(node, graph)
    dtype = graph.info(x).dtype
    if dtype not in ("float32", "float64"):
        raise unsupported(node, f"element type {dtype}")
    p = {"kind": node.op, "outer": outer, "n": n, "inner": inner, "dtype": dtype}
    tag = f"{node.op.lower()}_{dtype_tag(dtype)}_{outer}x{n}x{inner}"
    return KernelCall("softmax", tag, p, [("x", x)], [("y", y)])


def _rows_kernel(node, graph, rows, n, scale_index, bias, rms=False, stats=()):
    """normalize_rows over ``rows`` rows of ``n``; ``scale_index`` = (period, stride, div)."""
    x, scale = node.inputs[0], node.inputs[1]
    period, stride, div = scale_index
    p = {"rows": rows, "n": n, "period": period, "stride": stride, "div": div,
         "epsilon": float(node.attrs.get("epsilon", 1e-5)), "bias": bias is not None,
         "rms": rms, "stats": bool(stats)}
    inputs = [("x", x), ("scale", scale)] + ([("bias", bias)] if bias else [])
    outputs = [("y", node.outputs[0])] + [(role, t) for role, t in zip(("mean_out", "inv_std_dev"), stats)]
    tag = (f"{node.op.replace('Normalization', '').lower()}_f32_{rows}x{n}_s{period}x{stride}x{div}"
           + ("_bias" if bias else "") + ("_stats" if stats else ""))
    return KernelCall("normalize_rows", tag, p, inputs, outputs)


def _optional(node, k):
    return node.inputs[k] if len(node.inputs) > k and node.inputs[k] else None


def lower_layer_norm(node, graph):
    x, scale = node.inputs[0], node.inputs[1]
    _, rows, n = _split(graph.info(x).shape, node.attrs.get("axis", -1))
    bias = _optional(node, 2)
    for t in (scale, bias):
        if t and graph.info(t).size != n:
            raise unsupported(node, "a scale or bias broadcast over the normalized axes")
    stats = [t for t in node.outputs[1:] if t]
    if stats and len(stats) != 2:
        raise unsupported(node, "only one of the Mean / InvStdDev outputs")
    return _rows_kernel(node, graph, rows, n, (1, 0, 1), bias, stats=stats)


def lower_rms_norm(node, graph):
    x, scale = node.inputs[0], node.inputs[1]
    _, rows, n = _split(graph.info(x).shape, node.attrs.get("axis", -1))
    if graph.info(scale).size != n:
        raise unsupported(node, "a scale broadcast over the normalized axes")
    return _rows_kernel(node, graph, rows, n, (1, 0, 1), None, rms=True)


def lower_instance_norm(node, graph):
    shape = graph.info(node.inputs[0]).shape
    _, rows, n = _split(shape, 2)
    return _rows_kernel(node, graph, rows, n, (shape[1], 1, n), node.inputs[2])


def lower_group_norm(node, graph):
    shape = graph.info(node.inputs[0]).shape
    groups, c = node.attrs["num_groups"], shape[1]
    spatial = graph.info(node.inputs[0]).size // (shape[0] * c)
    rows, n = shape[0] * groups, c // groups * spatial
    if graph.info(node.inputs[1]).size == c:  # opset 21: a scale per channel
        index = (groups, c // groups, spatial)
    else:  # opset 18: a scale per group
        index = (groups, 1, n)
    return _rows_kernel(node, graph, rows, n, index, node.inputs[2])


def lower_batch_norm(node, graph):
    if node.attrs.get("training_mode", 0) or any(node.outputs[1:]):
        raise unsupported(node, "training mode (batch statistics)")
    x = node.inputs[0]
    shape = graph.info(x).shape
    inner = graph.info(x).size // (shape[0] * shape[1])
    p = {"n": shape[0], "c": shape[1], "inner": inner,
         "epsilon": float(node.attrs.get("epsilon", 1e-5))}
    roles = ("x", "scale", "bias", "mean", "var")
    return KernelCall("batchnorm", f"f32_{shape[0]}x{shape[1]}x{inner}", p,
                      list(zip(roles, node.inputs)), [("y", node.outputs[0])])


def lower_lp_norm(node, graph):
    x, y = node.inputs[0], node.outputs[0]
    shape = graph.info(x).shape
    axis = node.attrs.get("axis", -1) % len(shape)
    order = node.attrs.get("p", 2)
    if order not in (1, 2):
        raise unsupported(node, f"p={order}")
    _, outer, rest = _split(shape, axis)
    p = {"p": order, "outer": outer, "n": shape[axis], "inner": rest // shape[axis]}
    return KernelCall("lp_norm", f"l{order}_f32_{outer}x{p['n']}x{p['inner']}", p, [("x", x)],
                      [("y", y)])


def lower_lrn(node, graph):
    x, y = node.inputs[0], node.outputs[0]
    shape = graph.info(x).shape
    size = node.attrs["size"]
    p = {"n": shape[0], "c": shape[1], "inner": graph.info(x).size // (shape[0] * shape[1]),
         "size": size, "before": (size - 1) // 2, "after": size // 2,
         "alpha": float(node.attrs.get("alpha", 1e-4)), "beta": float(node.attrs.get("beta", 0.75)),
         "bias": float(node.attrs.get("bias", 1.0))}
    return KernelCall("lrn", f"f32_{p['n']}x{p['c']}x{p['inner']}_s{size}", p, [("x", x)],
                      [("y", y)])


def softmax_in_place(node, graph, tensor):
    """Each element of y is written after the same element of x was last read."""
    return in_place(lower_softmax(node, graph), tensor, ("x",))


def _softmax_vectorizes(node, graph, cpu):
    return (cpu.lanes() > 1 and node.op in ("Softmax", "LogSoftmax")
            and lower_softmax(node, graph).params["dtype"] == "float32")


def lower_softmax_vector(node, graph, cpu):
    call = lower_softmax(node, graph)
    call.template = "softmax_vector"
    call.params = dict(call.params, lanes=cpu.lanes())
    return call


def _softmax_cost(node, graph, cpu, lanes=None):
    """Three passes over the elements and an exp each (libm's, or vmath's on ``lanes``)."""
    per = 3 + LIBM_COST["Exp"] if lanes is None else (3 + VMATH_COST["Exp"]) / lanes
    return graph.info(node.inputs[0]).size * per


def softmax_vector_in_place(node, graph, cpu, tensor):
    """As the reference kernel: each vector (or element) of y is written after the same
    one of x was last read."""
    return in_place(lower_softmax_vector(node, graph, cpu), tensor, ("x",))


_SOFTMAX = [Tactic("reference", lambda n, g, cpu: lower_softmax(n, g), cost=_softmax_cost),
            Tactic("vector", lower_softmax_vector, _softmax_vectorizes,
                   lambda n, g, cpu: _softmax_cost(n, g, cpu, cpu.lanes()),
                   softmax_vector_in_place)]
TACTICS = {"Softmax": _SOFTMAX, "LogSoftmax": _SOFTMAX}


def layer_norm_in_place(node, graph, tensor):
    """The statistics of a row are taken before any of it is written; then each y[i]
    right after x[i] is read (a call that also writes the statistics is not in place)."""
    return in_place(lower_layer_norm(node, graph), tensor, ("x",))


def lower_layer_norm_vector(node, graph, cpu):
    call = lower_layer_norm(node, graph)
    call.template = "normalize_rows_vector"
    call.params = dict(call.params, lanes=cpu.lanes())
    return call


def _layer_norm_vectorizes(node, graph, cpu):
    return cpu.lanes() > 1 and lower_layer_norm(node, graph).params["n"] >= cpu.lanes()


def _layer_norm_cost(node, graph, cpu, lanes=None):
    """Three passes over the elements; the reference kernel's two sums wait on each add
    (4 cycles), the vector kernel's on one per vector."""
    return graph.info(node.inputs[0]).size * (9 if lanes is None else 9 / lanes)


def layer_norm_vector_in_place(node, graph, cpu, tensor):
    """As the reference kernel, vector by vector."""
    return in_place(lower_layer_norm_vector(node, graph, cpu), tensor, ("x",))


TACTICS["LayerNormalization"] = [
    Tactic("reference", lambda n, g, cpu: lower_layer_norm(n, g), cost=_layer_norm_cost),
    Tactic("vector", lower_layer_norm_vector, _layer_norm_vectorizes,
           lambda n, g, cpu: _layer_norm_cost(n, g, cpu, cpu.lanes()), layer_norm_vector_in_place)]


LOWERINGS = {"Softmax": lower_softmax, "LogSoftmax": lower_softmax, "Hardmax": lower_softmax,
             "LayerNormalization": lower_layer_norm, "RMSNormalization": lower_rms_norm,
             "InstanceNormalization": lower_instance_norm,
             "GroupNormalization": lower_group_norm, "BatchNormalization": lower_batch_norm,
             "LpNormalization": lower_lp_norm, "LRN": lower_lrn}
TYPED_OPS = {"Softmax", "LogSoftmax", "Hardmax"}  # float32 and float64
ELEMENTWISE = {"BatchNormalization"}  # (its scale and shift are per channel)
INPLACE = {"Softmax": softmax_in_place, "LogSoftmax": softmax_in_place,
           "Hardmax": softmax_in_place, "LayerNormalization": layer_norm_in_place}
