"""MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool (1-D and 2-D, NCHW)."""

from dataclasses import replace

from . import KernelCall, in_place, unsupported
from .spatial import overwrites_only_read_input, window_2d, window_tag


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


def pool_in_place(node, graph, tensor):
    """Straight over x where that only overwrites x already read (strided pools); else
    each channel is pooled into scratch, then copied over y's channel: that lands on
    channels of x already read, as long as a channel does not grow."""
    call = lower_pool(node, graph)
    p = call.params
    if overwrites_only_read_input(p):
        return in_place(call, tensor, ("x",))
    if p["oh"] * p["ow"] > p["h"] * p["w"]:
        return None
    return in_place(replace(call, params=dict(p, in_place=True)), tensor, ("x",),
                    scratch_bytes=4 * p["oh"] * p["ow"])


def global_pool_in_place(node, graph, tensor):
    """y[o] is written after row o of x is read, and lies at or before that row."""
    return in_place(lower_global_pool(node, graph), tensor, ("x",))


LOWERINGS = {"MaxPool": lower_pool, "AveragePool": lower_pool,
             "GlobalAveragePool": lower_global_pool, "GlobalMaxPool": lower_global_pool}
INPLACE = {"MaxPool": pool_in_place, "AveragePool": pool_in_place,
           "GlobalAveragePool": global_pool_in_place, "GlobalMaxPool": global_pool_in_place}
