"""SIMD tactics of the elementwise ops (unary.py, binary.py): the reference kernel, or
``vector``: the innermost loop in whole vectors of the target (the rest one by one), with
the fused epilogue on vectors. A unary chain qualifies when every op in it has a vector
form (no libm call: the transcendental ones call templates/kernels/lib/vmath.mako); a binary
op when both operands walk its innermost dimension contiguously or not at all (a
broadcast). On a scalar CPU the same kernel runs on one-lane vectors when its chain has
a vmath function that beats libm on floats (``epilogue.SCALAR_MATH``).
"""

from onnxcc.ops.common.epilogue import BINARY as ARITHMETIC
from onnxcc.ops.common.epilogue import SCALAR_MATH, VECTOR_STATEMENTS, vectorizable
from onnxcc.ops.common.tiling import epilogue_cost

from . import LOWERINGS, Tactic, in_place
from .binary import binary_in_place, lower_binary
from .unary import EXPRESSIONS, lower_unary, unary_chain


def _with_lanes(call, cpu, template):
    call.template = template
    call.params = dict(call.params, lanes=cpu.lanes())
    return call


def _float32(node, graph):
    """Vector kernels are float32 (other element types run the typed reference kernels)."""
    return all(graph.info(t).dtype == "float32" for t in node.inputs + node.outputs if t)


def _worth_it(cpu, chain):
    """A SIMD CPU; or a scalar one when a vmath function beats the libm call it replaces
    (the kernel then runs on one-lane vectors)."""
    return cpu.lanes() > 1 or any(op in SCALAR_MATH for op, _ in chain)


def _unary_vectorizes(node, graph, cpu):
    chain = unary_chain(node)
    return (_float32(node, graph) and _worth_it(cpu, chain) and _elements(node, graph) >= cpu.lanes()
            and all(op in VECTOR_STATEMENTS for op, _ in chain))


def _binary_vectorizes(node, graph, cpu):
    if not _float32(node, graph):
        return False
    p = lower_binary(node, graph).params
    return (_worth_it(cpu, p["epilogue"]) and p["shape"][-1] >= cpu.lanes()
            and p["a_strides"][-1] in (0, 1) and p["b_strides"][-1] in (0, 1)
            and vectorizable(p["epilogue"], 0))


def _elements(node, graph):
    return graph.info(node.outputs[0]).size


def _unary_cost(node, graph, cpu, lanes=None):
    """``lanes``: the vector kernel's (None: the reference kernel, libm)."""
    return _elements(node, graph) * (1 / (lanes or 1) + epilogue_cost(1, unary_chain(node), lanes))


def _binary_cost(node, graph, cpu, lanes=None):
    """Cycles of the float32 kernel and its fused chain; another element type runs the
    typed elementwise kernel, which fuses nothing (no ``epilogue``)."""
    p = lower_binary(node, graph).params
    return _elements(node, graph) * (3 / (lanes or 1) + epilogue_cost(1, p.get("epilogue", []), lanes))


def _unary_vector(node, graph, cpu):
    return _with_lanes(lower_unary(node, graph), cpu, "unary_vector")


def _binary_vector(node, graph, cpu):
    return _with_lanes(lower_binary(node, graph), cpu, "binary_vector")


def _unary_vector_in_place(node, graph, cpu, tensor):
    """A vector of y is written right after the same vector of x is read."""
    return in_place(_unary_vector(node, graph, cpu), tensor, ("x",))


def _binary_vector_in_place(node, graph, cpu, tensor):
    """As the reference kernel (binary.py), a vector at a time."""
    reference = binary_in_place(node, graph, tensor)
    return reference and in_place(_binary_vector(node, graph, cpu), tensor,
                                  list(reference.overwrites.values()))


# (the reference kernels are looked up when lowered: a test may replace one)
UNARY = [Tactic("reference", lambda n, g, cpu: LOWERINGS[n.op](n, g), cost=_unary_cost),
         Tactic("vector", _unary_vector, _unary_vectorizes,
                lambda n, g, cpu: _unary_cost(n, g, cpu, cpu.lanes()), _unary_vector_in_place)]
BINARY = [Tactic("reference", lambda n, g, cpu: LOWERINGS[n.op](n, g), cost=_binary_cost),
          Tactic("vector", _binary_vector, _binary_vectorizes,
                 lambda n, g, cpu: _binary_cost(n, g, cpu, cpu.lanes()), _binary_vector_in_place)]
TACTICS = {**{op: UNARY for op in EXPRESSIONS}, **{op: BINARY for op in ARITHMETIC}}
