"""Einsum, any equation: one loop per index letter, the output's outside, the summed ones
inside, every operand read with the strides its letters give (a repeated letter reads a
diagonal, an ellipsis broadcasts like numpy), for every element type."""

from . import KernelCall, unsupported
from .layout import row_major_strides
from .unary import dtype_tag

ELLIPSIS_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def parse_equation(equation, shapes):
    """(operand letters, output letters) with every '...' spelled as capital letters."""
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"{len(terms)} operand(s) in the equation, {len(shapes)} given")
    ellipsis_rank = max((len(s) - (len(t) - 3) for t, s in zip(terms, shapes) if "..." in t),
                        default=0)
    ellipsis = ELLIPSIS_LETTERS[:ellipsis_rank]

    def spell(term, rank=None):
        if "..." not in term:
            return term
        k = ellipsis_rank if rank is None else rank - (len(term) - 3)
        return term.replace("...", ellipsis[ellipsis_rank - k:])
    operands = [spell(t, len(s)) for t, s in zip(terms, shapes)]
    if arrow:
        output = spell(rhs)
    else:  # implicit: the ellipsis, then the letters used once, in alphabetical order
        counts = "".join(operands)
        output = ellipsis + "".join(sorted(c for c in set(counts) if c.islower() and counts.count(c) == 1))
    return operands, output


def lower_einsum(node, graph):
    xs, y = node.inputs, node.outputs[0]
    shapes = [graph.info(x).shape for x in xs]
    try:
        operands, output = parse_equation(node.attrs["equation"], shapes)
    except ValueError as e:
        raise unsupported(node, f"equation '{node.attrs['equation']}' ({e})") from None
    sizes = {}
    for letters, shape in zip(operands, shapes):
        for c, d in zip(letters, shape):
            sizes[c] = max(sizes.get(c, 1), d)
    summed = sorted(set(sizes) - set(output))
    strides = []
    for letters, shape in zip(operands, shapes):
        row = row_major_strides(shape)
        per_letter = {}
        for c, d, s in zip(letters, shape, row):
            per_letter[c] = per_letter.get(c, 0) + (s if d > 1 else 0)
        strides.append(per_letter)
    dtype = graph.info(y).dtype
    p = {"output": [[c, sizes[c]] for c in output], "summed": [[c, sizes[c]] for c in summed],
         "strides": strides, "dtype": dtype}
    equation = ",".join(operands) + "->" + output
    tag = f"{dtype_tag(dtype)}_{equation.replace(',', '_').replace('->', '_to_')}_" + \
        "_".join("x".join(map(str, s)) for s in shapes)
    return KernelCall("einsum", tag, p, [(f"x{k}", x) for k, x in enumerate(xs)], [("y", y)])


LOWERINGS = {"Einsum": lower_einsum}
TYPED_OPS = {"Einsum"}
