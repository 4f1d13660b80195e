"""MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool (1-D and 2-D, NCHW), as tactics:

  reference  the plain loops (a window covering the whole input is a global pool)
  vector     an output row at a time: the kh input rows reduced in vectors over the input
             width into a padded scratch row, then kw taps of it at stride sw per vector of
             outputs (a load, or two and a deinterleave at stride 2); an average divides by
             its window's count (rows at run time times a table of columns)

Only the reference kernels write over their input (INPLACE).

MaxPool and GlobalMaxPool also run on int8 / uint8 (the reference kernels, over the
codes: max commutes with quantization, and onnxruntime runs MaxPool on the integers
too); padding never wins, as the lowest value of the type starts every window.
"""

import numpy as np

from onnxcc.core.cgen import c_type

from . import KernelCall, Tactic, in_place, unsupported
from .common.spatial import window_2d, window_over_x, window_tag
from .unary import dtype_tag

#: element types of the max kernels (the average ones are float32: ops.lower checks)
MAX_TYPES = {"float32": "-INFINITY", "int8": "-128", "uint8": "0"}


def _dtype(node, graph):
    """The element type of the pool (a max pool's may be an integer one)."""
    dtype = graph.info(node.inputs[0]).dtype
    types = MAX_TYPES if node.op in TYPED_OPS else ["float32"]
    if dtype not in types or graph.info(node.outputs[0]).dtype != dtype:
        raise unsupported(node, f"element type {dtype}",
                          hint=f"onnxcc compiles {node.op} for {', '.join(types)}")
    return dtype


def _typed(g, dtype):
    """The C type of the elements and the lowest value (where a max starts)."""
    g.update(ctype=c_type(dtype), lowest=MAX_TYPES[dtype], dtype=dtype)
    return g


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
    return _typed(g, _dtype(node, graph))


def _is_global(g):
    """The one window is the whole input: a global pool."""
    return ((g["oh"], g["ow"]) == (1, 1) and (g["kh"], g["kw"]) == (g["h"], g["w"])
            and (g["pt"], g["pl"], g["pb"], g["pr"]) == (0, 0, 0, 0))


def global_call(kind, outer, inner, x, y, lanes=1, dtype="float32"):
    template = "global_pool" if lanes == 1 else "global_pool_vector"
    return KernelCall(template, f"{kind}_{dtype_tag(dtype)}_{outer}x{inner}",
                      _typed({"kind": kind, "outer": outer, "inner": inner, "lanes": lanes}, dtype),
                      [("x", x)], [("y", y)])


def lower_pool(node, graph, cpu=None):
    g = _window(node, graph)
    x, y = node.inputs[0], node.outputs[0]
    if _is_global(g):
        return global_call(g["kind"], g["n"] * g["c"], g["h"] * g["w"], x, y, dtype=g["dtype"])
    tag = (f"{g['kind']}_{dtype_tag(g['dtype'])}_{window_tag(g)}"
           + ("_incpad" if g["count_include_pad"] else ""))
    return KernelCall("pool2d", tag, g, [("x", x)], [("y", y)])


def _vectorizable(node, graph, cpu):
    return _window(node, graph)["dtype"] == "float32" and cpu.lanes() > 1


def _column_counts(g, width):
    """Columns each output's window counts (as the reference kernel: real ones, or with
    count_include_pad the window clipped to the padded input, which ends pr past the
    input, as onnxruntime); 1 past the outputs and
    for a window of none (its sum is 0 then, as the reference kernel's average)."""
    counts = []
    for ox in range(width):
        x0 = ox * g["sw"] - g["pl"]
        if ox >= g["ow"]:
            counts.append(1.0)
        elif g["count_include_pad"]:
            counts.append(float(min(x0 + g["kw"], g["w"] + g["pr"]) - x0))
        else:
            counts.append(float(max(1, min(x0 + g["kw"], g["w"]) - max(x0, 0))))
    return counts


def lower_vector(node, graph, cpu):
    g = _window(node, graph)
    x, y = node.inputs[0], node.outputs[0]
    lanes = cpu.lanes()
    if _is_global(g):
        return global_call(g["kind"], g["n"] * g["c"], g["h"] * g["w"], x, y, lanes)
    vecs = -(-g["ow"] // lanes)
    # the padded row: every tap of every vector (the last one's extra lanes too) lies in it
    row_len = max(g["pl"] + g["w"], vecs * lanes * g["sw"] + (g["kw"] - 1) * g["dw"])
    p = dict(g, lanes=lanes, vecs=vecs, row_len=row_len)
    if g["kind"] == "avg":
        p["col_counts"] = _column_counts(g, vecs * lanes)
    tag = f"{g['kind']}_f32_{window_tag(g)}" + ("_incpad" if g["count_include_pad"] else "")
    return KernelCall("pool2d_vector", tag, p, [("x", x)], [("y", y)], scratch_bytes=4 * row_len)


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
    tap = 1 if g["sw"] == 1 else 2 if g["sw"] == 2 else lanes  # loads (and shuffles)
    per_row = (-(-g["w"] // lanes) * g["kh"] + -(-g["ow"] // lanes) * g["kw"] * tap + 12)
    return g["n"] * g["c"] * g["oh"] * per_row


def lower_global_pool(node, graph, cpu=None):
    x, y = node.inputs[0], node.outputs[0]
    shape = graph.info(x).shape
    outer, inner = shape[0] * shape[1], 1
    for d in shape[2:]:
        inner *= d
    kind = "max" if node.op == "GlobalMaxPool" else "avg"
    dtype = _dtype(node, graph)
    return global_call(kind, outer, inner, x, y, cpu.lanes() if cpu and inner > 1 else 1, dtype)


def _global_vectorizable(node, graph, cpu):
    return _dtype(node, graph) == "float32" and cpu.lanes() > 1


def cost_global(node, graph, cpu, vector=False):
    shape = graph.info(node.inputs[0]).shape
    elements = 1
    for d in shape:
        elements *= d
    return elements / (cpu.lanes() if vector else 1) + shape[0] * shape[1] * 10


def _rows_overwrite_only_read_input(g):
    """Whether the row kernel may write y straight over x: output row oy is written after
    its input rows were reduced into scratch, and must land before the first input row a
    later output row reads (channel 0 is the tightest, as a channel does not grow)."""
    if g["oh"] * g["ow"] > g["h"] * g["w"]:
        return False
    for oy in range(g["oh"] - 1):
        later = [iy for o in range(oy + 1, g["oh"]) for ky in range(g["kh"])
                 if 0 <= (iy := o * g["sh"] - g["pt"] + ky * g["dh"]) < g["h"]]
        if later and (oy + 1) * g["ow"] > min(later) * g["w"]:
            return False
    return True


def vector_in_place(node, graph, cpu, tensor):
    """A global pool writes y[o] after reading row o of x; the row kernel where its rows
    of y land only on rows of x already read."""
    call = lower_vector(node, graph, cpu)
    if call.template == "pool2d_vector" and not _rows_overwrite_only_read_input(call.params):
        return None
    return in_place(call, tensor, ("x",))


_WINDOWED = [Tactic("reference", lower_pool, cost=cost_reference),
             Tactic("vector", lower_vector, _vectorizable, cost_vector, vector_in_place)]
_GLOBAL = [Tactic("reference", lambda n, g, cpu: lower_global_pool(n, g), cost=cost_global),
           Tactic("vector", lower_global_pool, _global_vectorizable,
                  lambda n, g, cpu: cost_global(n, g, cpu, vector=True),
                  lambda n, g, cpu, t: in_place(lower_global_pool(n, g, cpu), t, ("x",)))]
TACTICS = {"MaxPool": _WINDOWED, "AveragePool": _WINDOWED,
           "GlobalAveragePool": _GLOBAL, "GlobalMaxPool": _GLOBAL}


def pool_in_place(node, graph, tensor):
    """By spatial.window_over_x; a window over the whole input is a global pool
    (global_pool_in_place)."""
    call = lower_pool(node, graph)
    if call.template == "global_pool":
        return in_place(call, tensor, ("x",))
    return window_over_x(call, tensor, np.dtype(call.params["dtype"]).itemsize)


def global_pool_in_place(node, graph, tensor):
    """y[o] is written after row o of x is read, and lies at or before that row."""
    return in_place(lower_global_pool(node, graph), tensor, ("x",))


INPLACE = {"MaxPool": pool_in_place, "AveragePool": pool_in_place,
           "GlobalAveragePool": global_pool_in_place, "GlobalMaxPool": global_pool_in_place}
TYPED_OPS = {"MaxPool", "GlobalMaxPool"}  # float32, int8, uint8 (_dtype checks)
