"""Conv: direct convolution, grouped and depthwise, with the fused epilogue."""

from . import KernelCall
from .spatial import window_2d, window_tag
from .unary import epilogue_of, epilogue_tag


def lower_conv(node, graph):
    x, w = node.inputs[0], node.inputs[1]
    b = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
    r = node.inputs[3] if len(node.inputs) > 3 else None  # fused residual (fuse_residual_add)
    y = node.outputs[0]
    w_shape = graph.info(w).shape
    g = window_2d(node, graph.info(x).shape, graph.info(y).shape,
                  node.attrs.get("kernel_shape", w_shape[2:]))
    g.update(m=w_shape[0], group=node.attrs.get("group", 1), bias=b is not None,
             residual=r is not None, epilogue=epilogue_of(node))
    kind = "dw" if g["group"] == g["c"] and g["m"] == g["c"] and g["c"] > 1 else f"g{g['group']}"
    tag = f"f32_{kind}_{window_tag(g)}_m{g['m']}{epilogue_tag(g['epilogue'])}"
    inputs = [("x", x), ("w", w)] + ([("b", b)] if b else []) + ([("r", r)] if r else [])
    return KernelCall("conv2d", tag, g, inputs, [("y", y)])


LOWERINGS = {"Conv": lower_conv}
