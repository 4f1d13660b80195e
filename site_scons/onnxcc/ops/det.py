"""Det: the determinant of each square matrix (Gaussian elimination, partial pivoting)."""

from . import KernelCall
from .layout import _prod


def lower_det(node, graph):
    x, y = node.inputs[0], node.outputs[0]
    shape = graph.info(x).shape
    p = {"count": _prod(shape[:-2]), "n": shape[-1]}
    return KernelCall("det", f"f32_{p['count']}x{p['n']}x{p['n']}", p, [("x", x)], [("y", y)])


LOWERINGS = {"Det": lower_det}
