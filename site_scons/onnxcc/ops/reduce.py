"""The Reduce family (any set of axes) and ArgMax / ArgMin, for every element type.

ReduceMean, ReduceSum and ReduceMax of float32 over contiguous rows (the last axes, or
H x W of NCHW: a network's global average pool) also have a vector tactic:
global_pool_vector's sums in vectors of partial sums."""

import numpy as np

from onnxcc.core.cgen import CNumbers
from onnxcc.ops.common.broadcast import merge_dims

from . import KernelCall, Tactic, unsupported
from .layout import _prod, row_major_strides, strided_copy
from .pool import global_call
from .unary import dtype_tag


def _limit(t, largest):
    """The identity of max (largest=False) or min: -inf / +inf, or the type's limit."""
    if t.is_float:
        return t.lit(float("-inf") if not largest else float("inf"))
    if t.dtype == "bool":
        return "0" if not largest else "1"
    info = np.iinfo(t.dtype)
    return t.lit(info.max if largest else info.min)


def _reduction(op, t, n):
    """(init, step, final) C of a reduction over n elements: ``acc`` accumulates ``v``."""
    if op == "ReduceMax":
        return _limit(t, False), "acc = v > acc ? v : acc;", "acc"
    if op == "ReduceMin":
        return _limit(t, True), "acc = v < acc ? v : acc;", "acc"
    zero = t.lit(0)
    absolute = f"{t.fn('fabs')}(v)" if t.is_float else ("(v < 0 ? -v : v)" if t.is_signed else "v")
    return {
        "ReduceSum": (zero, "acc += v;", "acc"),
        "ReduceMean": (zero, "acc += v;", f"acc / {t.lit(n)}"),
        "ReduceProd": (t.lit(1), "acc *= v;", "acc"),
        "ReduceL1": (zero, f"acc += {absolute};", "acc"),
        "ReduceL2": (zero, "acc += v * v;", f"({t.ctype}){t.fn('sqrt')}(acc)"),
        "ReduceSumSquare": (zero, "acc += v * v;", "acc"),
        "ReduceLogSum": (zero, "acc += v;", f"{t.fn('log')}(acc)"),
        "ReduceLogSumExp": (zero, f"acc += {t.fn('exp')}(v - first);",
                            f"first + {t.fn('log')}(acc)"),
    }[op]


def _axes(node, shape):
    """The reduced axes, sorted; None for noop_with_empty_axes' copy."""
    axes = node.attrs.get("axes")
    if not axes:
        if node.attrs.get("noop_with_empty_axes", 0):
            return None
        axes = range(len(shape))
    return sorted({a % len(shape) for a in axes})


def _walks(shape, axes):
    """(kept shape, strides), (reduced shape, strides): x's dimensions merged where contiguous."""
    strides = row_major_strides(shape)
    kept = [d for d in range(len(shape)) if d not in axes]
    kept_walk = merge_dims([shape[d] for d in kept], [strides[d] for d in kept])
    red_walk = merge_dims([shape[d] for d in axes], [strides[d] for d in axes])
    return (kept_walk[0], kept_walk[1][0]), (red_walk[0], red_walk[1][0])


def lower_reduce(node, graph):
    x, y = node.inputs[0], node.outputs[0]
    shape = graph.info(x).shape
    axes = _axes(node, shape)
    if axes is None:
        return strided_copy(node, graph, shape, row_major_strides(shape))
    (kept_shape, kept_strides), (red_shape, red_strides) = _walks(shape, axes)
    n = _prod(shape[d] for d in axes)
    if n == 0:
        red_shape, red_strides = [], []  # an empty reduction: no loop, the identity
    dtype = graph.info(y).dtype
    if op_float_only(node.op) and dtype not in ("float32", "float64"):
        raise unsupported(node, f"element type {dtype}")
    t = CNumbers(dtype)
    init, step, final = _reduction(node.op, t, n)
    first = node.op == "ReduceLogSumExp"
    p = {"kept": kept_shape, "kept_strides": kept_strides, "reduced": red_shape,
         "reduced_strides": red_strides, "dtype": dtype, "init": init, "step": step,
         "final": final, "first": "first = v > first ? v : first;" if first else None,
         "first_init": _limit(t, False) if first else None}
    tag = (f"{node.op[6:].lower()}_{dtype_tag(dtype)}_{'x'.join(map(str, shape))}"
           f"_a{''.join(map(str, axes))}")
    return KernelCall("reduce", tag, p, [("x", x)], [("y", y)])


#: the reductions global_pool_vector runs, by its kind
ROWS = {"ReduceMean": "avg", "ReduceSum": "sum", "ReduceMax": "max"}


def _rows(node, graph):
    """(outer, inner) when a float32 Mean, Sum or Max reduces contiguous rows of x (the
    last axes, or over H x W of NCHW: a global pool), else None."""
    shape = graph.info(node.inputs[0]).shape
    if node.op not in ROWS or graph.info(node.inputs[0]).dtype != "float32" or not shape:
        return None
    axes = _axes(node, shape)
    if axes is None or _prod(shape) == 0:
        return None
    (kept_shape, kept_strides), (red_shape, red_strides) = _walks(shape, axes)
    inner = _prod(red_shape)
    # (merge_dims gives no dimensions as [1] of stride 0)
    if red_strides != [1] and red_shape != [1] or kept_shape != [1] and kept_strides != [inner]:
        return None
    return _prod(kept_shape), inner


def lower_reduce_rows(node, graph, cpu):
    outer, inner = _rows(node, graph)
    return global_call(ROWS[node.op], outer, inner, node.inputs[0], node.outputs[0], cpu.lanes())


def _reduce_cost(node, graph, cpu, lanes=None):
    """The reference kernel's accumulator waits on each add (4 cycles) an element; the
    vector kernel's on each of its four vectors' adds."""
    elements = graph.info(node.inputs[0]).size
    return elements * 4 if lanes is None else elements / lanes + _rows(node, graph)[0] * 10


_ROW_TACTICS = [Tactic("reference", lambda n, g, cpu: lower_reduce(n, g), cost=_reduce_cost),
                Tactic("vector", lower_reduce_rows,
                       lambda n, g, cpu: cpu.lanes() > 1 and _rows(n, g) is not None,
                       lambda n, g, cpu: _reduce_cost(n, g, cpu, cpu.lanes()))]
TACTICS = {op: _ROW_TACTICS for op in ROWS}


def op_float_only(op):
    return op in ("ReduceLogSum", "ReduceLogSumExp", "ReduceL2")


def lower_arg_reduce(node, graph):
    x, y = node.inputs[0], node.outputs[0]
    shape = graph.info(x).shape
    axis = node.attrs.get("axis", 0) % len(shape)
    last = bool(node.attrs.get("select_last_index", 0))
    better = (">" if node.op == "ArgMax" else "<") + ("=" if last else "")
    p = {"kind": node.op, "outer": _prod(shape[:axis]), "n": shape[axis],
         "inner": _prod(shape[axis + 1:]), "dtype": graph.info(x).dtype, "last": last,
         "better": better}
    tag = (f"{dtype_tag(p['dtype'])}_{p['outer']}x{p['n']}x{p['inner']}"
           + ("_last" if last else ""))
    return KernelCall("arg_reduce", f"{node.op[3:].lower()}_{tag}", p, [("x", x)], [("y", y)])


REDUCTIONS = ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
              "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare")
LOWERINGS = {**{op: lower_reduce for op in REDUCTIONS},
             "ArgMax": lower_arg_reduce, "ArgMin": lower_arg_reduce}
TYPED_OPS = set(LOWERINGS)
