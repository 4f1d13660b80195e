"""Conv (NCHW, 1-D and 2-D, grouped and depthwise) with the fused epilogue, as tactics:

  direct     the reference: one scalar loop nest, the smallest code
  gemm1x1    a 1x1 stride-1 unpadded convolution is a GEMM of the weights and the input
  im2col     the input's windows copied into scratch columns, then a GEMM
  implicit   a GEMM that reads the windows in place from a zero-padded copy of the input,
             split into stride phases so that every step reads contiguous vectors
  depthwise, depthwise_shift, depthwise_s2, depthwise_nchwc
             one group per channel: a channel, or a vector's channels, at a time
             (depthwise.py)
  winograd   3x3 stride 1: Winograd F(4x4, 3x3) or F(2x2, 3x3), fewer multiplies
             (winograd.py)

This module holds the direct tactic and the Conv's TACTICS table, each other tactic its
own module; what every tactic reads off the node (geometry, tags, tiles, phase planes) is
ops/common/conv_geometry.py's.

The GEMM tactics read the weights packed at compile time into panels (ops/common/packing.py) and
keep a tile of output channels x pixels in registers (ops/common/tiling.py), its vectors along the
pixels -- or, where an image has few pixels and many channels, along the channels
("transposed": the weights packed in panels of a vector's channels, the tiles of a
panel stored into a scratch transposed back to NCHW in blocks, templates/kernels/
panel_store.mako).
"""

from onnxcc.ops import KernelCall, Tactic, in_place
from onnxcc.ops.common.conv_geometry import conv_spans, conv_tag, geometry, macs
from onnxcc.ops.common.epilogue import after_sums, residual_roles
from onnxcc.ops.common.tiling import epilogue_cost, scalar_mac_cost

from .depthwise import (cost_depthwise, cost_direct_s2, cost_nchwc, cost_shift, depthwise_applies,
                        depthwise_in_place, direct_applies, lower_depthwise, lower_direct_s2,
                        lower_nchwc, lower_shift, nchwc_applies, shift_applies)
from .gemm import cost_gemm1x1, cost_im2col, gemm1x1_in_place, is_1x1, lower_gemm1x1, lower_im2col
from .implicit import cost_implicit, lower_implicit
from .winograd import cost_winograd, lower_winograd, winograd_applies

# --- direct (reference) -------------------------------------------------------------------

def lower_direct(node, graph, cpu=None):
    g, inputs, outputs = geometry(node, graph)
    return KernelCall("conv2d", conv_tag(g), g, inputs, outputs)


def cost_direct(node, graph, cpu):
    g, _, _ = geometry(node, graph)
    pixels = g["n"] * g["m"] * g["oh"] * g["ow"]
    return macs(g) * scalar_mac_cost(cpu) + pixels * 6 + epilogue_cost(pixels, after_sums(g["epilogue"]))



def _over_residual(lower):
    """The tactic's kernel writing y over a fused residual: each tile reads the residual's
    elements right before it stores the same elements of y."""
    def call_over(node, graph, cpu, tensor):
        call = lower(node, graph, cpu)
        return in_place(call, tensor, residual_roles(call, graph))
    return call_over


def _unscaled(node, graph, cpu=None):
    """Whether the Conv has no fused input scale: the tactics other than direct and gemm1x1
    (all it is fused into, passes/fuse_channel_scale.py) read their weights unscaled."""
    return not geometry(node, graph)[0]["scale"]


TACTICS = {"Conv": [
    Tactic("direct", lower_direct, cost=cost_direct),
    Tactic("gemm1x1", lower_gemm1x1, is_1x1, cost_gemm1x1, gemm1x1_in_place),
    Tactic("im2col", lower_im2col, _unscaled, cost_im2col, _over_residual(lower_im2col)),
    Tactic("implicit", lower_implicit, _unscaled, cost_implicit,
           in_place=_over_residual(lower_implicit)),
    Tactic("depthwise", lower_depthwise, depthwise_applies, cost_depthwise, depthwise_in_place),
    Tactic("depthwise_shift", lower_shift, shift_applies, cost_shift,
           lambda node, graph, cpu, tensor: depthwise_in_place(node, graph, cpu, tensor, lower_shift)),
    # (reads x while writing y: in place over a residual only)
    Tactic("depthwise_s2", lower_direct_s2, direct_applies, cost_direct_s2,
           _over_residual(lower_direct_s2)),
    Tactic("depthwise_nchwc", lower_nchwc, nchwc_applies, cost_nchwc,
           lambda node, graph, cpu, tensor: depthwise_in_place(node, graph, cpu, tensor, lower_nchwc)),
    Tactic("winograd", lower_winograd, winograd_applies, cost_winograd,
           _over_residual(lower_winograd)),
]}
EPILOGUE_SPANS = {"Conv": conv_spans}
