"""GridSample (1-3 spatial dimensions): nearest, linear and cubic sampling of the input
at the grid's coordinates, zeros / border / reflection padding, align_corners. The grid
is read at run time, so the taps are computed in the kernel, as the ONNX reference does."""

from . import KernelCall, unsupported
from .layout import _prod, row_major_strides

TAPS = {"nearest": 1, "linear": 2, "bilinear": 2, "cubic": 4, "bicubic": 4}


def lower_grid_sample(node, graph):
    x, grid = node.inputs
    y = node.outputs[0]
    x_shape, y_shape = graph.info(x).shape, graph.info(y).shape
    mode = node.attrs.get("mode", "linear" if graph.opset >= 20 else "bilinear")
    padding = node.attrs.get("padding_mode", "zeros")
    if mode not in TAPS or padding not in ("zeros", "border", "reflection"):
        raise unsupported(node, f"mode '{mode}' with padding_mode '{padding}'")
    dims = list(x_shape[2:])
    if not 1 <= len(dims) <= 3:
        raise unsupported(node, f"{len(dims)} spatial dimensions")
    align = bool(node.attrs.get("align_corners", 0))
    p = {"n": x_shape[0], "c": x_shape[1], "dims": dims, "strides": row_major_strides(dims),
         "out": _prod(y_shape[2:]), "mode": {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode),
         "taps": TAPS[mode], "padding": padding, "align_corners": align,
         # the coordinates beyond which padding applies
         "low": [0.0 if align else -0.5] * len(dims),
         "high": [d - 1.0 if align else d - 0.5 for d in dims]}
    tag = (f"{p['mode']}_{padding}{'_align' if align else ''}_f32_{'x'.join(map(str, x_shape))}"
           f"_o{p['out']}")
    return KernelCall("grid_sample", tag, p, [("x", x), ("grid", grid)], [("y", y)])


LOWERINGS = {"GridSample": lower_grid_sample}
