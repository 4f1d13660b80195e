"""PatchJoin: one patch's piece of the join tensor copied into place.

Only plan/patches.py makes this op (patch-based execution): ``y = PatchJoin([full,]
x)`` is ``full`` with ``x`` ([1, C, ph, pw]) written at rows and columns ``at``; the
first patch's join has no ``full`` (the later patches fill the rest). Over ``full`` in
place it copies nothing else; otherwise it first copies ``full``.
"""

from . import KernelCall, in_place
from .unary import dtype_tag

TYPED_OPS = {"PatchJoin"}


def _call(node, graph, copy_full):
    x, y = node.inputs[-1], node.outputs[0]
    _, c, ph, pw = graph.info(x).shape
    _, _, h, w = graph.info(y).shape
    r0, c0 = node.attrs["at"]
    full = len(node.inputs) == 2
    p = {"c": c, "ph": ph, "pw": pw, "h": h, "w": w, "r0": r0, "c0": c0, "full": full,
         "copy_full": copy_full and full}
    tag = f"{dtype_tag(graph.info(y).dtype)}_{c}x{ph}x{pw}_in_{h}x{w}_at{r0}x{c0}"
    return KernelCall("patch_join", tag, p, ([("full", node.inputs[0])] if full else []) + [("x", x)],
                      [("y", y)])


def lower_patch_join(node, graph):
    return _call(node, graph, True)


def patch_join_in_place(node, graph, tensor):
    if len(node.inputs) != 2 or tensor != node.inputs[0]:
        return None
    return in_place(_call(node, graph, False), tensor, ("full",))


LOWERINGS = {"PatchJoin": lower_patch_join}
INPLACE = {"PatchJoin": patch_join_in_place}
