"""The Reduce family (any set of axes) and ArgMax / ArgMin, for every element type."""

import numpy as np

from ..cgen import CNumbers
from . import KernelCall, unsupported
from .broadcast import merge_dims
from .layout import _prod, row_major_strides, strided_copy
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


def lower_reduce(node, graph):
    x, y = node.inputs[0], node.outputs[0]
    shape = graph.info(x).shape
    rank = len(shape)
    axes = node.attrs.get("axes")
    if not axes:
        if node.attrs.get("noop_with_empty_axes", 0):
            return strided_copy(node, graph, shape, row_major_strides(shape))
        axes = range(rank)
    axes = sorted({a % rank for a in axes})
    strides = row_major_strides(shape)
    kept = [d for d in range(rank) if d not in axes]
    kept_shape, (kept_strides,) = merge_dims([shape[d] for d in kept], [strides[d] for d in kept])
    red_shape, (red_strides,) = merge_dims([shape[d] for d in axes], [strides[d] for d in axes])
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
