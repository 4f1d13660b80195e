"""Elementwise ops of several tensors with numpy broadcasting, for every element type:
arithmetic, Pow, Mod, Min/Max/Sum/Mean, comparisons, logic, bit operations, PRelu, Where.

``EXPRESSIONS`` maps an op type to a function (operand locals, attrs, t) -> the C
expression of the result, ``t`` (``cgen.CNumbers``) spelling the inputs' element type.
The broadcast is resolved at compile time into per-input element strides, as for the
float32 arithmetic of ``binary`` (``broadcast``).
"""

import numpy as np

from onnxcc.core.cgen import CNumbers
from onnxcc.ops.common.broadcast import broadcast_strides, merge_dims
from onnxcc.ops.common.epilogue import BINARY

from . import KernelCall
from .unary import dtype_tag

LOCALS = "abcdefghijklmnopqrstuvwxyz"


def _variadic(fn):
    """An associative op of two operands folded over any number of them."""
    def expression(v, a, t):
        e = v[0]
        for x in v[1:]:
            e = fn(e, x, t)
        return e
    return expression


def _max(x, y, t):
    if t.is_float:  # a NaN operand gives NaN, as numpy's maximum
        return f"(isnan({x}) || {x} > {y} ? {x} : {y})"
    return f"({x} > {y} ? {x} : {y})"


def _min(x, y, t):
    if t.is_float:
        return f"(isnan({x}) || {x} < {y} ? {x} : {y})"
    return f"({x} < {y} ? {x} : {y})"


def _pow(v, a, t, out):
    if t.dtype == out.dtype == "float32":
        return f"powf({v[0]}, {v[1]})"
    return f"({out.ctype})pow((double){v[0]}, (double){v[1]})"


def _mod(v, a, t):
    x, y = v
    if a.get("fmod", 0):  # the sign of the dividend (C's % and fmod)
        return f"{t.fn('fmod')}({x}, {y})" if t.is_float else f"({t.ctype})({x} % {y})"
    # the sign of the divisor (Python's %)
    r = f"{t.fn('fmod')}({x}, {y})" if t.is_float else f"({x} % {y})"
    if not t.is_signed:
        return f"({t.ctype}){r}"
    return f"({t.ctype})({r} != 0 && ({r} < 0) != ({y} < 0) ? {r} + {y} : {r})"


def _bit_shift(v, a, t):
    x, s = v
    width = 8 * np.dtype(t.dtype).itemsize
    out_of_range = f"{s} < 0 || {s} >= {width}" if t.is_signed else f"{s} >= {width}u"
    if a["direction"] == "LEFT":
        unsigned = t.ctype if not t.is_signed else "u" + t.ctype
        return f"({t.ctype})({out_of_range} ? 0 : ({unsigned})(({unsigned}){x} << {s}))"
    fill = f"({x} < 0 ? -1 : 0)" if t.is_signed else "0"
    return f"({t.ctype})({out_of_range} ? {fill} : {x} >> {s})"


def _prelu(v, a, t):
    x, slope = v
    return f"({x} < 0 ? {slope} * {x} : {x})" if t.is_signed else x


EXPRESSIONS = {
    "Add": lambda v, a, t: f"{v[0]} + {v[1]}",
    "Sub": lambda v, a, t: f"{v[0]} - {v[1]}",
    "Mul": lambda v, a, t: f"{v[0]} * {v[1]}",
    "Div": lambda v, a, t: f"{v[0]} / {v[1]}",  # integers: truncated, as ONNX
    "Mod": _mod,
    "Max": _variadic(_max),
    "Min": _variadic(_min),
    "Sum": _variadic(lambda x, y, t: f"{x} + {y}"),
    "Mean": lambda v, a, t: f"({' + '.join(v)}) / {t.lit(len(v))}",
    "Equal": lambda v, a, t: f"{v[0]} == {v[1]}",
    "Less": lambda v, a, t: f"{v[0]} < {v[1]}",
    "Greater": lambda v, a, t: f"{v[0]} > {v[1]}",
    "LessOrEqual": lambda v, a, t: f"{v[0]} <= {v[1]}",
    "GreaterOrEqual": lambda v, a, t: f"{v[0]} >= {v[1]}",
    "And": lambda v, a, t: f"{v[0]} && {v[1]}",
    "Or": lambda v, a, t: f"{v[0]} || {v[1]}",
    "Xor": lambda v, a, t: f"!{v[0]} != !{v[1]}",
    "BitwiseAnd": lambda v, a, t: f"{v[0]} & {v[1]}",
    "BitwiseOr": lambda v, a, t: f"{v[0]} | {v[1]}",
    "BitwiseXor": lambda v, a, t: f"{v[0]} ^ {v[1]}",
    "BitShift": _bit_shift,
    "PRelu": _prelu,
    "Where": lambda v, a, t: f"{v[0]} ? {v[1]} : {v[2]}",
}
#: ops whose result has its own element type (the others: the inputs')
RESULT_TYPED = {"Pow": _pow}
TYPED_OPS = set(EXPRESSIONS) | set(RESULT_TYPED)
ELEMENTWISE = TYPED_OPS  # (binary.py lowers the two-input ones)


def lower_elementwise(node, graph):
    xs = [x for x in node.inputs if x]
    y = node.outputs[0]
    out_shape = graph.info(y).shape
    shape, strides = merge_dims(out_shape, *[broadcast_strides(graph.info(x).shape, out_shape)
                                             for x in xs])
    dtypes = [graph.info(x).dtype for x in xs]
    # the type the operation is done in: Where's is its values', the others' their first input's
    t = CNumbers(dtypes[1] if node.op == "Where" else dtypes[0])
    out = CNumbers(graph.info(y).dtype)
    local = list(LOCALS[:len(xs)])
    attrs = {k: v for k, v in node.attrs.items() if not k.startswith("onnxcc_")}
    if node.op in RESULT_TYPED:
        expression = RESULT_TYPED[node.op](local, attrs, t, out)
    else:
        expression = EXPRESSIONS[node.op](local, attrs, t)
    dims = "x".join(map(str, shape))
    operands = "_".join("x".join(map(str, s)) for s in strides)
    tag = f"{node.op.lower()}_{dtype_tag(t.dtype)}_{dims}_s{operands}"
    params = {"shape": shape, "strides": strides, "out_strides": broadcast_strides(shape, shape),
              "locals": local, "dtypes": dtypes, "expression": expression}
    return KernelCall("elementwise", tag, params, [(f"x{k}", x) for k, x in enumerate(xs)],
                      [("y", y)])


#: float32 arithmetic lowers through ``binary`` (with an epilogue), which falls back here
LOWERINGS = {op: lower_elementwise for op in TYPED_OPS - set(BINARY)}
