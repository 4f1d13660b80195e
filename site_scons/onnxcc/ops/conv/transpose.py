"""ConvTranspose (1-D, 2-D, 3-D, groups, dilations, output padding, every auto_pad)."""

from onnxcc.ops import KernelCall


def begin_pads(node, x_shape, kernel):
    """Where the output starts in the full transposed convolution, per spatial axis (as
    the ONNX reference computes it: explicit pads, or SAME_* around output_shape)."""
    a = node.attrs
    spatial = len(x_shape) - 2
    if "pads" in a:
        return list(a["pads"][:spatial])
    auto_pad = a.get("auto_pad", "NOTSET")
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        return [0] * spatial
    strides = a.get("strides", [1] * spatial)
    dilations = a.get("dilations", [1] * spatial)
    out_pad = a.get("output_padding", [0] * spatial)
    out = a.get("output_shape", [x_shape[2 + i] * strides[i] for i in range(spatial)])[-spatial:]
    pads = []
    for i in range(spatial):
        total = (strides[i] * (x_shape[2 + i] - 1) + out_pad[i] + (kernel[i] - 1) * dilations[i] + 1
                 - out[i])
        pads.append(total // 2 if auto_pad == "SAME_UPPER" else total - total // 2)
    return pads


def lower_conv_transpose(node, graph):
    x, w = node.inputs[0], node.inputs[1]
    b = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
    y = node.outputs[0]
    x_shape, w_shape, y_shape = graph.info(x).shape, graph.info(w).shape, graph.info(y).shape
    spatial = len(x_shape) - 2
    kernel = list(w_shape[2:])
    group = node.attrs.get("group", 1)
    p = {"n": x_shape[0], "c": x_shape[1], "m": y_shape[1], "group": group,
         "in": list(x_shape[2:]), "out": list(y_shape[2:]), "kernel": kernel,
         "strides": list(node.attrs.get("strides", [1] * spatial)),
         "dilations": list(node.attrs.get("dilations", [1] * spatial)),
         "pads": begin_pads(node, x_shape, kernel), "bias": b is not None}
    dims = "x".join(map(str, p["in"]))
    tag = (f"f32_g{group}_{'x'.join(map(str, kernel))}_s{'x'.join(map(str, p['strides']))}"
           f"_p{'x'.join(map(str, p['pads']))}_{p['c']}x{dims}_m{p['m']}")
    inputs = [("x", x), ("w", w)] + ([("b", b)] if b else [])
    return KernelCall("conv_transpose", tag, p, inputs, [("y", y)])


LOWERINGS = {"ConvTranspose": lower_conv_transpose}
