"""LpPool (1-D and 2-D): the p-norm of every window."""

from onnxcc.ops.common.spatial import window_2d, window_tag

from . import KernelCall


def lower_lp_pool(node, graph):
    x, y = node.inputs[0], node.outputs[0]
    g = window_2d(node, graph.info(x).shape, graph.info(y).shape, node.attrs["kernel_shape"])
    g["p"] = int(node.attrs.get("p", 2))
    return KernelCall("lp_pool2d", f"l{g['p']}_f32_{window_tag(g)}", g, [("x", x)], [("y", y)])


LOWERINGS = {"LpPool": lower_lp_pool}
