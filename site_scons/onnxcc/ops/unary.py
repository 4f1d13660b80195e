"""Elementwise functions of one tensor, and the epilogues fused into other kernels.

``EXPRESSIONS`` maps an op type to a function (C variable, attrs) -> C expression of
that variable; the optimizer fuses any chain of them into the producer's epilogue and the
templates spell it with ``epilogue.epilogue_code``.
"""

from ..cgen import c_float
from . import KernelCall, in_place


def _clip(v, a):
    lo, hi = a.get("min"), a.get("max")
    e = v
    if lo is not None:
        e = f"({e} < {c_float(lo)} ? {c_float(lo)} : {e})"
    if hi is not None:
        e = f"({e} > {c_float(hi)} ? {c_float(hi)} : {e})"
    return e


def _hard_sigmoid_of(v, alpha, beta):
    return _clip(f"({c_float(alpha)} * {v} + {c_float(beta)})", {"min": 0.0, "max": 1.0})


EXPRESSIONS = {
    "Relu": lambda v, a: f"({v} > 0.0f ? {v} : 0.0f)",
    "Clip": _clip,
    "LeakyRelu": lambda v, a: f"({v} >= 0.0f ? {v} : {c_float(a.get('alpha', 0.01))} * {v})",
    "Sigmoid": lambda v, a: f"(1.0f / (1.0f + expf(-{v})))",
    "Tanh": lambda v, a: f"tanhf({v})",
    "HardSigmoid": lambda v, a: _hard_sigmoid_of(v, a.get("alpha", 0.2), a.get("beta", 0.5)),
    "HardSwish": lambda v, a: f"({v} * {_hard_sigmoid_of(v, 1.0 / 6.0, 0.5)})",
}


def epilogue_tag(chain):
    return "".join("_" + op.lower() for op, _ in chain)


def unary_chain(node):
    """The node's own function followed by whatever the optimizer fused after it."""
    own = {k: v for k, v in node.attrs.items() if not k.startswith("onnxcc_")}
    return [[node.op, own]] + epilogue_of(node)


def epilogue_of(node):
    return node.attrs.get("onnxcc_epilogue", [])


def lower_unary(node, graph):
    x, y = node.inputs[0], node.outputs[0]
    chain = unary_chain(node)
    n = graph.info(y).size
    return KernelCall("unary", f"f32_n{n}{epilogue_tag(chain)}", {"n": n, "chain": chain},
                      [("x", x)], [("y", y)])


def unary_in_place(node, graph, tensor):
    """y[i] is written right after x[i] is read: y may be x."""
    return in_place(lower_unary(node, graph), tensor, ("x",))


LOWERINGS = {op: lower_unary for op in EXPRESSIONS}
INPLACE = {op: unary_in_place for op in EXPRESSIONS}
