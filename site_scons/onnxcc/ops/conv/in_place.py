"""Conv kernels of the reference (direct) tactic that write their output over an input:
over a fused residual, or over x (MCUNet's TinyEngine idea) by spatial.py's rules --
channelwise with one channel of scratch, pointwise with one pixel of scratch. The memory
planner uses them when x dies at the conv."""

from onnxcc.ops import in_place
from onnxcc.ops.common.epilogue import residual_roles
from onnxcc.ops.common.spatial import conv_over_x

from .tactics import lower_direct


def conv_in_place(node, graph, tensor):
    """A fused residual r: every kernel reads r's element right before it writes the same
    element of y. Else over x, by spatial.conv_over_x."""
    call = lower_direct(node, graph)
    residuals = residual_roles(call, graph)
    if tensor in [t for role, t in call.inputs if role in residuals]:
        return in_place(call, tensor, residuals)
    return conv_over_x(call, tensor, 4)


INPLACE = {"Conv": conv_in_place}
