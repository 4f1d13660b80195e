"""MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool (1-D and 2-D, NCHW)."""

from . import KernelCall, unsupported
from .spatial import window_2d, window_tag


def lower_pool(node, graph):
    x, y = node.inputs[0], node.outputs[0]
    if len(node.outputs) > 1 and node.outputs[1]:
        raise unsupported(node, "the Indices output")
    if node.attrs.get("storage_order", 0):
        raise unsupported(node, "storage_order=1")
    g = window_2d(node, graph.info(x).shape, graph.info(y).shape, node.attrs["kernel_shape"])
    kind = "max" if node.op == "MaxPool" else "avg"
    g.update(kind=kind, count_include_pad=int(node.attrs.get("count_include_pad", 0)))
    if kind == "avg" and (g["dh"], g["dw"]) != (1, 1):
        raise unsupported(node, "dilations on AveragePool")
    tag = f"{kind}_f32_{window_tag(g)}" + ("_incpad" if g["count_include_pad"] else "")
    return KernelCall("pool2d", tag, g, [("x", x)], [("y", y)])


def lower_global_pool(node, graph):
    x, y = node.inputs[0], node.outputs[0]
    shape = graph.info(x).shape
    outer, inner = shape[0] * shape[1], 1
    for d in shape[2:]:
        inner *= d
    kind = "max" if node.op == "GlobalMaxPool" else "avg"
    return KernelCall("global_pool", f"{kind}_f32_{outer}x{inner}",
                      {"kind": kind, "outer": outer, "inner": inner}, [("x", x)], [("y", y)])


LOWERINGS = {"MaxPool": lower_pool, "AveragePool": lower_pool,
             "GlobalAveragePool": lower_global_pool, "GlobalMaxPool": lower_global_pool}
