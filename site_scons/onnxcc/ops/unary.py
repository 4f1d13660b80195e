"""Elementwise functions of one tensor, and the epilogues fused into other kernels.

``EXPRESSIONS`` maps an op type to a function (C variable, attrs, t) -> C expression of
that variable, where ``t`` (``cgen.CNumbers``) spells constants and <math.h> functions
for the result's element type; the optimizer fuses any chain of float32 ones into the
producer's epilogue and the templates spell it with ``epilogue.epilogue_code``.
"""

import math

from onnxcc.core.cgen import CNumbers

from . import KernelCall, in_place


def _clip(v, a, t):
    lo, hi = a.get("min"), a.get("max")
    e = v
    if lo is not None:
        e = f"({e} < {t.lit(lo)} ? {t.lit(lo)} : {e})"
    if hi is not None:
        e = f"({e} > {t.lit(hi)} ? {t.lit(hi)} : {e})"
    return e


def _hard_sigmoid_of(v, alpha, beta, t):
    return _clip(f"({t.lit(alpha)} * {v} + {t.lit(beta)})", {"min": 0.0, "max": 1.0}, t)


def _softplus(v, t):
    """log(1 + exp(v)) without overflow for large v."""
    return (f"({v} > {t.lit(0)} ? {v} + {t.fn('log1p')}({t.fn('exp')}(-{v})) "
            f": {t.fn('log1p')}({t.fn('exp')}({v})))")


def _abs(v, a, t):
    if t.is_float:
        return f"{t.fn('fabs')}({v})"
    return f"({v} < 0 ? -{v} : {v})" if t.is_signed else v


def _gelu(v, a, t):
    if a.get("approximate", "none") == "tanh":
        inner = f"{t.lit(math.sqrt(2 / math.pi))} * ({v} + {t.lit(0.044715)} * {v} * {v} * {v})"
        return f"({t.lit(0.5)} * {v} * ({t.lit(1)} + {t.fn('tanh')}({inner})))"
    return f"({t.lit(0.5)} * {v} * ({t.lit(1)} + {t.fn('erf')}({v} * {t.lit(math.sqrt(0.5))})))"


def _selu(v, a, t):
    alpha = a.get("alpha", 1.67326319217681884765625)
    gamma = a.get("gamma", 1.05070102214813232421875)
    return (f"({t.lit(gamma)} * ({v} > {t.lit(0)} ? {v} "
            f": {t.lit(alpha)} * {t.fn('expm1')}({v})))")


def _celu(v, a, t):
    alpha = a.get("alpha", 1.0)
    return (f"({v} > {t.lit(0)} ? {v} "
            f": {t.lit(alpha)} * {t.fn('expm1')}({v} / {t.lit(alpha)}))")


def _shrink(v, a, t):
    lambd, bias = a.get("lambd", 0.5), a.get("bias", 0.0)
    return (f"({v} < {t.lit(-lambd)} ? {v} + {t.lit(bias)} "
            f": ({v} > {t.lit(lambd)} ? {v} - {t.lit(bias)} : {t.lit(0)}))")


def _is_inf(v, a, t):
    pos, neg = a.get("detect_positive", 1), a.get("detect_negative", 1)
    if pos and neg:
        return f"(isinf({v}) != 0)"
    if not pos and not neg:
        return "0"
    return f"(isinf({v}) && {v} {'>' if pos else '<'} 0)"


def _cast(v, a, t):
    return f"({v} != 0)" if t.dtype == "bool" else f"({t.ctype})({v})"


def _math(name):
    return lambda v, a, t: f"{t.fn(name)}({v})"


EXPRESSIONS = {
    "Relu": lambda v, a, t: f"({v} > {t.lit(0)} ? {v} : {t.lit(0)})",
    "Clip": _clip,
    "LeakyRelu": lambda v, a, t: f"({v} >= {t.lit(0)} ? {v} : {t.lit(a.get('alpha', 0.01))} * {v})",
    "Sigmoid": lambda v, a, t: f"({t.lit(1)} / ({t.lit(1)} + {t.fn('exp')}(-{v})))",
    "Tanh": _math("tanh"),
    "HardSigmoid": lambda v, a, t: _hard_sigmoid_of(v, a.get("alpha", 0.2), a.get("beta", 0.5), t),
    "HardSwish": lambda v, a, t: f"({v} * {_hard_sigmoid_of(v, 1.0 / 6.0, 0.5, t)})",
    "Exp": _math("exp"), "Log": _math("log"), "Sqrt": _math("sqrt"), "Erf": _math("erf"),
    "Floor": _math("floor"), "Ceil": _math("ceil"),
    "Round": _math("rint"),  # half to even, as ONNX specifies (the default rounding mode)
    "Sin": _math("sin"), "Cos": _math("cos"), "Tan": _math("tan"), "Asin": _math("asin"),
    "Acos": _math("acos"), "Atan": _math("atan"), "Sinh": _math("sinh"), "Cosh": _math("cosh"),
    "Asinh": _math("asinh"), "Acosh": _math("acosh"), "Atanh": _math("atanh"),
    "Reciprocal": lambda v, a, t: f"({t.lit(1)} / {v})",
    "Neg": lambda v, a, t: f"(-{v})",
    "Abs": _abs,
    "Sign": lambda v, a, t: (f"(({v} > {t.lit(0)}) - ({v} < {t.lit(0)}))" if t.is_signed
                             else f"({v} > {t.lit(0)})"),
    "Softplus": lambda v, a, t: _softplus(v, t),
    "Softsign": lambda v, a, t: f"({v} / ({t.lit(1)} + {t.fn('fabs')}({v})))",
    "Elu": lambda v, a, t: f"({v} < {t.lit(0)} ? {t.lit(a.get('alpha', 1.0))} * {t.fn('expm1')}({v}) : {v})",
    "Selu": _selu,
    "Celu": _celu,
    "ThresholdedRelu": lambda v, a, t: f"({v} > {t.lit(a.get('alpha', 1.0))} ? {v} : {t.lit(0)})",
    "Shrink": _shrink,
    "Gelu": _gelu,
    "Mish": lambda v, a, t: f"({v} * {t.fn('tanh')}({_softplus(v, t)}))",
    "Swish": lambda v, a, t: f"({v} / ({t.lit(1)} + {t.fn('exp')}({t.lit(-a.get('alpha', 1.0))} * {v})))",
    "IsNaN": lambda v, a, t: f"(isnan({v}) != 0)",
    "IsInf": _is_inf,
    "Not": lambda v, a, t: f"(!{v})",
    "BitwiseNot": lambda v, a, t: f"({t.ctype})~{v}",
    "Cast": _cast,
    "CastLike": _cast,  # the second input gives only the element type (the output's)
}
#: every expression is spelled for the element type it computes (ONNX's type constraints
#: say which types an op takes); only float32 chains fuse into other kernels
TYPED_OPS = set(EXPRESSIONS)
ELEMENTWISE = set(EXPRESSIONS)


def expression_code(var, step, dtype="float32"):
    """C expression of one chain step ([op, attrs]) applied to ``var``; ``dtype`` is the
    result's element type."""
    op, attrs = step
    return EXPRESSIONS[op](var, attrs, CNumbers(dtype))


def epilogue_tag(chain):
    return "".join("_" + op.lower() for op, _ in chain)


def unary_chain(node):
    """The node's own function followed by whatever the optimizer fused after it."""
    own = {k: v for k, v in node.attrs.items() if not k.startswith("onnxcc_")}
    return [[node.op, own]] + epilogue_of(node)


def epilogue_of(node):
    return node.attrs.get("onnxcc_epilogue", [])


def dtype_tag(dtype):
    """Short element type in kernel names: f32, f64, i64, u8, b."""
    return {"float32": "f32", "float64": "f64", "bool": "b"}.get(
        dtype, dtype.replace("uint", "u").replace("int", "i"))


def lower_unary(node, graph):
    x, y = node.inputs[0], node.outputs[0]
    chain = unary_chain(node)
    x_dtype, y_dtype = graph.info(x).dtype, graph.info(y).dtype
    n = graph.info(y).size
    types = dtype_tag(y_dtype) if x_dtype == y_dtype else f"{dtype_tag(x_dtype)}_to_{dtype_tag(y_dtype)}"
    return KernelCall("unary", f"{types}_n{n}{epilogue_tag(chain)}",
                      {"n": n, "chain": chain, "x_dtype": x_dtype, "y_dtype": y_dtype},
                      [("x", x)], [("y", y)])


def unary_in_place(node, graph, tensor):
    """y[i] is written right after x[i] is read: y may be x (when their elements are of
    one type: a wider y[i] would cover x[i + 1] before it is read)."""
    if graph.info(node.inputs[0]).dtype != graph.info(node.outputs[0]).dtype:
        return None
    return in_place(lower_unary(node, graph), tensor, ("x",))


LOWERINGS = {op: lower_unary for op in EXPRESSIONS}
INPLACE = {op: unary_in_place for op in EXPRESSIONS}
