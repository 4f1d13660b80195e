"""Col2Im: columns of sliding blocks summed back into an image (1-3 spatial dimensions,
strides, dilations, pads)."""

from onnxcc.ops.common.spatial import window_count

from . import KernelCall


def lower_col2im(node, graph):
    x, y = node.inputs[0], node.outputs[0]
    a = node.attrs
    image, block = list(a["image_shape"]), list(a["block_shape"])
    r = len(image)
    strides = list(a.get("strides", [1] * r))
    dilations = list(a.get("dilations", [1] * r))
    pads = list(a.get("pads", [0] * 2 * r))
    positions = [window_count(image[d] + pads[d] + pads[r + d], block[d], strides[d], dilations[d])
                 for d in range(r)]
    n, c = graph.info(y).shape[:2]
    p = {"n": n, "c": c, "image": image, "block": block, "positions": positions,
         "strides": strides, "dilations": dilations, "pads": pads[:r]}
    tag = (f"f32_{c}x{'x'.join(map(str, image))}_k{'x'.join(map(str, block))}"
           f"_s{'x'.join(map(str, strides))}_p{'x'.join(map(str, pads[:r]))}")
    return KernelCall("col2im", tag, p, [("x", x)], [("y", y)])


LOWERINGS = {"Col2Im": lower_col2im}
