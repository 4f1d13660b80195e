"""MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool (1-D and 2-D, NCHW), as tactics:

  reference  the plain loops (a window covering the whole input is a global pool)
  vector     a channel at a time, padded into stride phases (like a depthwise convolution,
             ops/conv.py) so that each tap of an output row is one vector run; max pools
             pad with -inf, and average pools qualify where every window has the same count

Only the reference kernels write over their input (INPLACE).
"""

from dataclasses import replace

from . import KernelCall, Tactic, in_place, unsupported
from .conv import phase_planes
from .spatial import overwrites_only_read_input, window_2d, window_tag
from .tiling import copy_cost


def _window(node, graph):
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
    return g


def _is_global(g):
    """The one window is the whole input: a global pool."""
    return ((g["oh"], g["ow"]) == (1, 1) and (g["kh"], g["kw"]) == (g["h"], g["w"])
            and (g["pt"], g["pl"], g["pb"], g["pr"]) == (0, 0, 0, 0))


def _global_call(kind, outer, inner, x, y, lanes=1):
    template = "global_pool" if lanes == 1 else "global_pool_vector"
    return KernelCall(template, f"{kind}_f32_{outer}x{inner}",
                      {"kind": kind, "outer": outer, "inner": inner, "lanes": lanes},
                      [("x", x)], [("y", y)])


def lower_pool(node, graph, cpu=None):
    g = _window(node, graph)
    x, y = node.inputs[0], node.outputs[0]
    if _is_global(g):
        return _global_call(g["kind"], g["n"] * g["c"], g["h"] * g["w"], x, y)
    tag = f"{g['kind']}_f32_{window_tag(g)}" + ("_incpad" if g["count_include_pad"] else "")
    return KernelCall("pool2d", tag, g, [("x", x)], [("y", y)])


def _constant_count(g):
    """Every window holds kh * kw elements: no window reaches past the padded input, and
    padding (if any) counts."""
    inside = ((g["oh"] - 1) * g["sh"] + (g["kh"] - 1) * g["dh"] + 1 <= g["h"] + g["pt"] + g["pb"]
              and (g["ow"] - 1) * g["sw"] + (g["kw"] - 1) * g["dw"] + 1 <= g["w"] + g["pl"] + g["pr"])
    padded = any((g["pt"], g["pl"], g["pb"], g["pr"]))
    return inside and (not padded or g["count_include_pad"])


def _vectorizable(node, graph, cpu):
    g = _window(node, graph)
    return cpu.lanes() > 1 and (_is_global(g) or g["kind"] == "max" or _constant_count(g))


def lower_vector(node, graph, cpu):
    g = _window(node, graph)
    x, y = node.inputs[0], node.outputs[0]
    lanes = cpu.lanes()
    if _is_global(g):
        return _global_call(g["kind"], g["n"] * g["c"], g["h"] * g["w"], x, y, lanes)
    p = dict(g, lanes=lanes, vecs=max(1, min(4, -(-g["ow"] // lanes))))
    p.update(phase_planes(g, p["vecs"] * lanes))
    tag = f"{g['kind']}_f32_{window_tag(g)}"
    return KernelCall("pool2d_vector", tag, p, [("x", x)], [("y", y)],
                      scratch_bytes=4 * (p["channel_stride"] + p["slack"]))


def _outputs(g):
    return g["n"] * g["c"] * g["oh"] * g["ow"]


def cost_reference(node, graph, cpu):
    g = _window(node, graph)
    if _is_global(g):
        return g["n"] * g["c"] * g["h"] * g["w"] * 1.0
    return _outputs(g) * (g["kh"] * g["kw"] * 3 + 6)


def cost_vector(node, graph, cpu):
    g = _window(node, graph)
    lanes = cpu.lanes()
    if _is_global(g):
        return g["n"] * g["c"] * (g["h"] * g["w"] / lanes + 10)
    vectors = g["n"] * g["c"] * g["oh"] * -(-g["ow"] // lanes)
    planes = phase_planes(g, lanes)
    return vectors * (g["kh"] * g["kw"] + 4) + g["n"] * g["c"] * copy_cost(
        planes["channel_stride"], cpu, contiguous=g["sw"] == 1)


def lower_global_pool(node, graph, cpu=None):
    x, y = node.inputs[0], node.outputs[0]
    shape = graph.info(x).shape
    outer, inner = shape[0] * shape[1], 1
    for d in shape[2:]:
        inner *= d
    kind = "max" if node.op == "GlobalMaxPool" else "avg"
    return _global_call(kind, outer, inner, x, y, cpu.lanes() if cpu and inner > 1 else 1)


def cost_global(node, graph, cpu, vector=False):
    shape = graph.info(node.inputs[0]).shape
    elements = 1
    for d in shape:
        elements *= d
    return elements / (cpu.lanes() if vector else 1) + shape[0] * shape[1] * 10


def vector_in_place(node, graph, cpu, tensor):
    """Channel c of x is copied into the scratch planes before channel c of y is written,
    which lies within x's channels 0..c when a channel does not grow; a global pool writes
    y[o] after reading row o of x."""
    call = lower_vector(node, graph, cpu)
    p = call.params
    if call.template == "pool2d_vector" and p["oh"] * p["ow"] > p["h"] * p["w"]:
        return None
    return in_place(call, tensor, ("x",))


_WINDOWED = [Tactic("reference", lower_pool, cost=cost_reference),
             Tactic("vector", lower_vector, _vectorizable, cost_vector, vector_in_place)]
_GLOBAL = [Tactic("reference", lambda n, g, cpu: lower_global_pool(n, g), cost=cost_global),
           Tactic("vector", lower_global_pool, lambda n, g, cpu: cpu.lanes() > 1,
                  lambda n, g, cpu: cost_global(n, g, cpu, vector=True),
                  lambda n, g, cpu, t: in_place(lower_global_pool(n, g, cpu), t, ("x",)))]
TACTICS = {"MaxPool": _WINDOWED, "AveragePool": _WINDOWED,
           "GlobalAveragePool": _GLOBAL, "GlobalMaxPool": _GLOBAL}


def pool_in_place(node, graph, tensor):
    """Straight over x where that only overwrites x already read (strided pools); else
    each channel is pooled into scratch, then copied over y's channel: that lands on
    channels of x already read, as long as a channel does not grow. A window over the
    whole input is a global pool (global_pool_in_place)."""
    call = lower_pool(node, graph)
    p = call.params
    if call.template == "global_pool":
        return in_place(call, tensor, ("x",))
    if overwrites_only_read_input(p):
        return in_place(call, tensor, ("x",))
    if p["oh"] * p["ow"] > p["h"] * p["w"]:
        return None
    return in_place(replace(call, params=dict(p, in_place=True)), tensor, ("x",),
                    scratch_bytes=4 * p["oh"] * p["ow"])


def global_pool_in_place(node, graph, tensor):
    """y[o] is written after row o of x is read, and lies at or before that row."""
    return in_place(lower_global_pool(node, graph), tensor, ("x",))


INPLACE = {"MaxPool": pool_in_place, "AveragePool": pool_in_place,
           "GlobalAveragePool": global_pool_in_place, "GlobalMaxPool": global_pool_in_place}
