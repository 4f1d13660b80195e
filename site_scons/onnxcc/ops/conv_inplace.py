"""Conv kernels that write their output over an input: over a fused residual, or over x
(MCUNet's TinyEngine idea): depthwise with one channel of scratch, 1x1 with one pixel
of scratch. All are the reference (direct) tactic's kernels.

The kernel computes a piece of y into scratch from the part of x it needs, then copies
the piece over y: the proofs that the copy lands only on x already read are in each
function's docstring. The memory planner uses them when x dies at the conv.
"""

from . import in_place
from .conv import lower_direct
from .epilogue import residual_roles
from .spatial import overwrites_only_read_input


def _depthwise(g):
    return g["group"] == g["c"] == g["m"]


def _pointwise(g):
    return (g["group"] == 1 and (g["kh"], g["kw"], g["sh"], g["sw"]) == (1, 1, 1, 1)
            and (g["pt"], g["pl"], g["pb"], g["pr"]) == (0, 0, 0, 0))


def conv_in_place(node, graph, tensor):
    """A fused residual r: every kernel reads r's element right before it writes the same
    element of y.

    Depthwise, straight over x where that overwrites only x already read (see
    spatial.overwrites_only_read_input: strided ones), else with scratch: channel k of y goes to [k*OH*OW, (k+1)*OH*OW), which lies within
    channels 0..k of x when a channel does not grow (OH*OW <= H*W): all read already.

    1x1, stride 1, no pads: the C inputs of pixel p are copied to scratch, then y[k][p]
    written for every k. In batch 1 that is element k*H*W + p, x's own pixel p of
    channel k or beyond x's end; with batches, M <= C keeps batch b of y at or before
    batch b of x, so again only pixels already read are hit."""
    call = lower_direct(node, graph)
    g = call.params
    residuals = residual_roles(call, graph)
    if tensor in [t for role, t in call.inputs if role in residuals]:
        return in_place(call, tensor, residuals)
    if _depthwise(g) and overwrites_only_read_input(g):
        return in_place(call, tensor, ("x",))
    if _depthwise(g) and g["oh"] * g["ow"] <= g["h"] * g["w"]:
        return in_place(call, tensor, ("x",), template="conv2d_dw_inplace", tag=call.tag,
                        scratch_bytes=4 * g["oh"] * g["ow"])
    if _pointwise(g) and (g["n"] == 1 or g["m"] <= g["c"]):
        return in_place(call, tensor, ("x",), template="conv2d_1x1_inplace", tag=call.tag,
                        scratch_bytes=4 * g["c"])
    return None


INPLACE = {"Conv": conv_in_place}
