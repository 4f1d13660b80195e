"""Ops that walk one axis in order: CumSum and CumProd (inclusive or exclusive, forward
or reverse) and TopK, for every element type."""

from onnxcc.core.cgen import CNumbers

from . import KernelCall
from .layout import _prod
from .unary import dtype_tag


def _along(graph, x, axis):
    shape = graph.info(x).shape
    axis %= len(shape)
    return _prod(shape[:axis]), shape[axis], _prod(shape[axis + 1:])


def lower_cumulative(node, graph):
    x, y = node.inputs[0], node.outputs[0]
    outer, n, inner = _along(graph, x, node.attrs.get("axis", 0))
    t = CNumbers(graph.info(x).dtype)
    product = node.op == "CumProd"
    p = {"outer": outer, "n": n, "inner": inner, "dtype": t.dtype,
         "exclusive": bool(node.attrs.get("exclusive", 0)),
         "reverse": bool(node.attrs.get("reverse", 0)),
         "identity": t.lit(1 if product else 0), "combine": "*=" if product else "+="}
    tag = (f"{node.op[3:].lower()}_{dtype_tag(t.dtype)}_{outer}x{n}x{inner}"
           + ("_exclusive" if p["exclusive"] else "") + ("_reverse" if p["reverse"] else ""))
    return KernelCall("cumulative", tag, p, [("x", x)], [("y", y)])


def lower_topk(node, graph):
    x, (values, indices) = node.inputs[0], node.outputs
    outer, n, inner = _along(graph, x, node.attrs.get("axis", -1))
    largest = bool(node.attrs.get("largest", 1))
    p = {"outer": outer, "n": n, "inner": inner, "k": int(node.attrs["k"]),
         "dtype": graph.info(x).dtype, "better": ">" if largest else "<"}
    tag = (f"{'largest' if largest else 'smallest'}_{dtype_tag(p['dtype'])}_{outer}x{n}x{inner}"
           f"_k{p['k']}")
    return KernelCall("topk", tag, p, [("x", x)], [("values", values), ("indices", indices)])


LOWERINGS = {"CumSum": lower_cumulative, "CumProd": lower_cumulative, "TopK": lower_topk}
TYPED_OPS = set(LOWERINGS)
